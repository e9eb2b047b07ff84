#pragma once
// Oriented boxes' overlap and NMS as Ultralytics 8.4.117 computes them (utils/metrics.py probiou and
// batch_probiou: the Bhattacharyya overlap of the boxes' Gaussians, arXiv 2106.06072; utils/nms.py
// TorchNMS.fast_nms with batch_probiou). Boxes are xywhr: centre x, centre y, width, height, angle
// (radians).
#include <ATen/core/Tensor.h>

#include "yolotrain/loss/rotated_box_ops.hpp"

namespace yolotrain::metrics {

// The overlaps live with the loss, which needs them too (metrics depend on loss, not the reverse).
using loss::batch_probiou;
using loss::obb_covariance;
using loss::probiou;

/// Ultralytics' rotated NMS (TorchNMS.fast_nms with batch_probiou): the boxes in descending score,
/// each kept unless a box of a higher score (kept or not: Fast NMS) overlaps it by `iou` or more;
/// the kept indices into `boxes` [N, 5], in descending score.
at::Tensor nms_rotated(const at::Tensor& boxes, const at::Tensor& scores, double iou);

}  // namespace yolotrain::metrics
