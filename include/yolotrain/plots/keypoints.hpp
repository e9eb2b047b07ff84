#pragma once

#include <ATen/core/Tensor.h>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// Ultralytics' Annotator.kpts (utils/plotting.py): one instance's keypoints [k, 2 | 3] in pixels
/// of `image` (BGR), each a filled circle of `radius` (anti-aliased) unless its visibility is
/// below `conf_thres` (2-dim: unless at (0, 0)); 17 keypoints take 8.4's pose palette and, with
/// `limbs`, the COCO skeleton's 19 limbs (thickness ceil(line_width / 2), both ends visible), other
/// counts the class palette by keypoint index (class_color) and no limbs.
void draw_keypoints(data::Image& image, const at::Tensor& keypoints, int radius, int line_width,
                    double conf_thres = 0.25, bool limbs = true);

}  // namespace yolotrain::plots
