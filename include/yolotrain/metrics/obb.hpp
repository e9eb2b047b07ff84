#pragma once
// Oriented boxes' overlap and NMS as Ultralytics 8.4.117 computes them (utils/metrics.py probiou and
// batch_probiou: the Bhattacharyya overlap of the boxes' Gaussians, arXiv 2106.06072; utils/nms.py
// TorchNMS.fast_nms with batch_probiou). Boxes are xywhr: centre x, centre y, width, height, angle
// (radians).
#include <ATen/core/Tensor.h>

namespace yolotrain::metrics {

/// Ultralytics' _get_covariance_matrix: each box's Gaussian, [N, 1] each of a, b, c (the matrix
/// [[a, c], [c, b]] of (w^2 / 12 + floor, h^2 / 12 + floor) turned by the angle).
void obb_covariance(const at::Tensor& boxes, at::Tensor& a, at::Tensor& b, at::Tensor& c, double floor = 0.0);

/// Ultralytics' probiou of matching rows of `obb1` and `obb2` ([N, 5] each): [N, 1], 1 - the Hellinger
/// distance of their Gaussians; with `ciou`, minus the aspect-ratio term of CIoU; `floor` widens the
/// Gaussians (the loss's guard for boxes smaller than a stride).
at::Tensor probiou(const at::Tensor& obb1, const at::Tensor& obb2, bool ciou = false, double eps = 1e-7,
                   double floor = 0.0);

/// Ultralytics' batch_probiou: every box of `obb1` [N, 5] against every box of `obb2` [M, 5], [N, M].
at::Tensor batch_probiou(const at::Tensor& obb1, const at::Tensor& obb2, double eps = 1e-7);

/// Ultralytics' rotated NMS (TorchNMS.fast_nms with batch_probiou): the boxes in descending score,
/// each kept unless a box of a higher score (kept or not: Fast NMS) overlaps it by `iou` or more;
/// the kept indices into `boxes` [N, 5], in descending score.
at::Tensor nms_rotated(const at::Tensor& boxes, const at::Tensor& scores, double iou);

}  // namespace yolotrain::metrics
