#pragma once
// Oriented boxes' geometry as Ultralytics 8.4.117 computes it for its OBB task (utils/metrics.py
// probiou, batch_probiou and _get_covariance_matrix: the Bhattacharyya overlap of the boxes'
// Gaussians, arXiv 2106.06072; utils/ops.py xywhr2xyxyxyxy; utils/tal.py rbox2dist). Boxes are xywhr:
// centre x, centre y, width, height, angle (radians). The loss, its assigner and the metrics use them.
#include <ATen/core/Tensor.h>

#include <optional>

namespace yolotrain::loss {

/// Ultralytics' _get_covariance_matrix: each box's Gaussian, [N, 1] each of a, b, c (the matrix
/// [[a, c], [c, b]] of (w^2 / 12 + floor, h^2 / 12 + floor) turned by the angle).
void obb_covariance(const at::Tensor& boxes, at::Tensor& a, at::Tensor& b, at::Tensor& c, double floor = 0.0);

/// Ultralytics' probiou of matching rows of `obb1` and `obb2` ([N, 5] each): [N, 1], 1 - the Hellinger
/// distance of their Gaussians; with `ciou`, minus the aspect-ratio term of CIoU; `floor` widens the
/// Gaussians (8.4's RotatedBboxLoss: 0.01, a guard for boxes smaller than a stride).
at::Tensor probiou(const at::Tensor& obb1, const at::Tensor& obb2, bool ciou = false, double eps = 1e-7,
                   double floor = 0.0);

/// Ultralytics' batch_probiou: every box of `obb1` [N, 5] against every box of `obb2` [M, 5], [N, M].
at::Tensor batch_probiou(const at::Tensor& obb1, const at::Tensor& obb2, double eps = 1e-7);

/// Ultralytics' xywhr2xyxyxyxy: [..., 5] boxes to their corners [..., 4, 2] (centre + (w/2)(cos, sin)
/// + (h/2)(-sin, cos), in the order ++, +-, --, -+).
at::Tensor xywhr2xyxyxyxy(const at::Tensor& boxes);

/// Ultralytics' rbox2dist: rotated boxes' xywh [..., 4] and angles [..., 1] to the distances (l, t, r,
/// b) of each box's sides from `anchor_points` [A, 2] along the box's own axes; clamped to
/// [0, reg_max - 0.01] when reg_max is given (the DFL's bins).
at::Tensor rbox2dist(const at::Tensor& xywh, const at::Tensor& anchor_points, const at::Tensor& angle,
                     std::optional<double> reg_max = std::nullopt);

}  // namespace yolotrain::loss
