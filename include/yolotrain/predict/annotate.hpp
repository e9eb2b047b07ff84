#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"
#include "yolotrain/predict/predictor.hpp"

namespace yolotrain::predict {

/// How detections are drawn (Ultralytics' `line_width`, `show_labels`, `show_conf`).
struct AnnotateOptions {
  int line_width = 0;        ///< box line width in pixels; 0: max(round((h + w + 3) / 2 * 0.003), 2)
  bool show_labels = true;   ///< draw "name conf" above each box
  bool show_conf = true;     ///< include the confidence in the label
};

/// Ultralytics' per-class colour (its 8.2.36+ 20-colour palette, class index modulo 20), as B, G, R.
std::array<std::uint8_t, 3> class_color(std::int64_t cls);
/// The label text colour on class_color(cls): Ultralytics' dark blue on its light colours, else white (B, G, R).
std::array<std::uint8_t, 3> label_text_color(std::int64_t cls);

/// Draws `boxes` on `image` as Ultralytics' Results.plot() does with OpenCV: lowest confidence
/// first; each box an anti-aliased rectangle in its class colour, its label ("name 0.87") in
/// label_text_color() on a filled box of that colour above the box (below the top edge when there
/// is no room above, shifted left to stay inside the image).
void draw_detections(data::Image& image, const std::vector<Detection>& boxes, const AnnotateOptions& options = {});

/// One box (corners in pixels) with `label` above it (nothing when empty) in class `cls`'s
/// colours, `line_width` px wide: Ultralytics' Annotator.box_label, as draw_detections() draws each.
void draw_box_label(data::Image& image, float x1, float y1, float x2, float y2, const std::string& label,
                    std::int64_t cls, int line_width);

}  // namespace yolotrain::predict
