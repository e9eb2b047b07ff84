#pragma once
// Ultralytics' class colours and box labels (utils/plotting.py: Colors, Annotator.box_label), the
// one drawing of a labelled box that the batch mosaics, labels.jpg and predict's annotated images
// share.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// Ultralytics' per-class colour (its 8.2.36+ 20-colour palette, class index modulo 20), as B, G, R.
std::array<std::uint8_t, 3> class_color(std::int64_t cls);
/// The label text colour on class_color(cls): Ultralytics' dark blue on its light colours, else white (B, G, R).
std::array<std::uint8_t, 3> label_text_color(std::int64_t cls);

/// One box (corners in pixels) with `label` above it (nothing when empty) in class `cls`'s
/// colours, `line_width` px wide: Ultralytics' Annotator.box_label (OpenCV branch, 8.2.4x and
/// later: 3 px label padding, the label kept inside the right edge, below the top edge when there
/// is no room above).
void draw_box_label(data::Image& image, float x1, float y1, float x2, float y2, const std::string& label,
                    std::int64_t cls, int line_width);

/// An oriented box (its corners in pixels, in order) with `label` at its first corner: box_label
/// with a list of points (cv2.polylines, closed, not anti-aliased, as Ultralytics draws OBB boxes).
void draw_polygon_label(data::Image& image, const std::vector<std::array<int, 2>>& corners, const std::string& label,
                        std::int64_t cls, int line_width);

/// Lines of text at the top left, as Ultralytics' Annotator.text draws a classification result
/// (Results.plot: "name 0.87" per class at (round(0.03 h), round(0.03 h)), PIL mode): each line white on
/// its own dark grey (64, 64, 64) box, about max(round((h + w) / 2 * 0.035), 12) px high (PIL's
/// Arial there, OpenCV's Hershey font here), the next line below it.
void draw_text_lines(data::Image& image, const std::vector<std::string>& lines);

}  // namespace yolotrain::plots
