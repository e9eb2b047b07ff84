#pragma once

#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"
#include "yolotrain/plots/box_label.hpp"
#include "yolotrain/predict/predictor.hpp"

namespace yolotrain::predict {

/// How detections are drawn (Ultralytics' `line_width`, `show_labels`, `show_conf`).
struct AnnotateOptions {
  int line_width = 0;        ///< box line width in pixels; 0: max(round((h + w + 3) / 2 * 0.003), 2)
  bool show_labels = true;   ///< draw "name conf" above each box
  bool show_conf = true;     ///< include the confidence in the label
};

/// Blends the detections' masks (Detection::mask, those of the image's size) into `image` as
/// Ultralytics 8.4's Annotator.masks does: per pixel, image * prod(1 - m * alpha) + max(m * colour *
/// alpha) in float32, each mask in its class colour, truncated to bytes.
void draw_masks(data::Image& image, const std::vector<Detection>& boxes, float alpha = 0.5F);

/// Draws `boxes` on `image` as Ultralytics' Results.plot() does with OpenCV: their masks first
/// (draw_masks()), then the boxes, lowest confidence first; each box an anti-aliased rectangle in
/// its class colour, its label ("name 0.87") in label_text_color() on a filled box of that colour
/// above the box (below the top edge when there is no room above, shifted left to stay inside the
/// image); then each detection's keypoints (plots::draw_keypoints: radius 5, COCO's limbs for 17,
/// those under 0.25 left out), lowest confidence first.
void draw_detections(data::Image& image, const std::vector<Detection>& boxes, const AnnotateOptions& options = {});

/// Draws a classification result as Ultralytics' Results.plot does: its top-5 classes, most probable
/// first, one "name 0.87" line each (plots::draw_text_lines).
void draw_probabilities(data::Image& image, const Prediction& prediction, const std::vector<std::string>& names);
/// The box drawing it uses, plots' (Ultralytics' Colors and Annotator.box_label), by the names
/// they had here.
using plots::class_color;
using plots::draw_box_label;
using plots::label_text_color;

}  // namespace yolotrain::predict
