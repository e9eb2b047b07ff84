#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

// Anchor geometry, in one place for the head's decode, the loss and the ONNX export (Ultralytics
// keeps it in utils/tal.py): cell centres per level, and distances <-> boxes.
namespace yolotrain::nn {

/// Anchor points and their strides for per-level feature maps `feats` ([B, C, H_i, W_i]):
/// (x + offset, y + offset) in grid units of each level, row-major (y outer, x inner), levels
/// concatenated. Returns (anchor_points [A, 2], stride_tensor [A, 1]) in feats[0]'s dtype and
/// device. Throws yolotrain::Error when feats and strides differ in count.
std::pair<at::Tensor, at::Tensor> make_anchors(const std::vector<at::Tensor>& feats,
                                               const std::vector<double>& strides,
                                               double grid_cell_offset = 0.5);

/// Distances (l, t, r, b) along `dim` from `anchor_points` to boxes: xywh or xyxy.
/// Ultralytics' dist2rbox: distances (left, top, right, bottom along the box's own axes) and the
/// box's angle (radians) around each anchor to a rotated box (centre x, centre y, width, height),
/// along `dim`: the centre is the anchor plus the rotated half-difference of the distances.
at::Tensor dist2rbox(const at::Tensor& distance, const at::Tensor& angle, const at::Tensor& anchor_points,
                     int64_t dim = -1);

at::Tensor dist2bbox(const at::Tensor& distance, const at::Tensor& anchor_points, bool xywh = true,
                     int64_t dim = -1);

/// xyxy boxes to distances (l, t, r, b) from `anchor_points`, clamped to [0, reg_max - 0.01]
/// (the v8 loss passes reg_max - 1 = 15, so 14.99).
at::Tensor bbox2dist(const at::Tensor& anchor_points, const at::Tensor& bbox, double reg_max);

}  // namespace yolotrain::nn
