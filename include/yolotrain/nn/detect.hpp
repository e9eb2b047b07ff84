#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn {

/// Options of Detect: the decoupled YOLOv8 head over `ch.size()` feature levels.
struct DetectOptions {
  DetectOptions(int64_t nc, std::vector<int64_t> ch) : nc_(nc), ch_(std::move(ch)) {}
  /// Number of classes.
  TORCH_ARG(int64_t, nc);
  /// Input channels of each level (P3, P4, P5 for YOLOv8).
  TORCH_ARG(std::vector<int64_t>, ch);
  /// DFL bins per box side.
  TORCH_ARG(int64_t, reg_max) = 16;
};

/// Ultralytics' Detect head. Children `cv2` (box branch per level: Conv3x3, Conv3x3, Conv2d 1x1 ->
/// 4*reg_max), `cv3` (class branch: Conv3x3, Conv3x3, Conv2d 1x1 -> nc) and `dfl`.
class DetectImpl : public torch::nn::Cloneable<DetectImpl> {
 public:
  explicit DetectImpl(const DetectOptions& options);
  void reset() override;

  /// Raw per-level outputs cat(box 4*reg_max, cls nc) as [B, 4*reg_max+nc, H_i, W_i].
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& xs);

  /// Decodes raw outputs into [B, 4+nc, A]: xywh in pixels (DFL expectation, dist2bbox, times
  /// the level stride) and sigmoid class scores, anchors ordered level by level, row-major.
  /// Needs strides (set by DetectionModel's probe forward).
  at::Tensor decode(const std::vector<at::Tensor>& raw);

  /// Ultralytics' bias_init(): box biases 1.0, class biases log(5 / nc / (640 / stride)^2).
  void bias_init();

  /// Folds every BatchNorm into its convolution.
  void fuse();

  /// Outputs per anchor: 4*reg_max + nc.
  int64_t no() const { return options.nc() + 4 * options.reg_max(); }

  DetectOptions options;
  /// Stride of each level (empty until set).
  std::vector<double> stride;
  torch::nn::ModuleList cv2{nullptr};
  torch::nn::ModuleList cv3{nullptr};
  DFL dfl{nullptr};
};
TORCH_MODULE(Detect);

/// Anchor points and their strides for feature maps `feats` ([B, C, H_i, W_i]) with `strides`:
/// per level the cell centres (x + offset, y + offset) in grid units, y outer and x inner, levels
/// concatenated. Returns {anchors [A, 2], stride_tensor [A, 1]} (Ultralytics' make_anchors).
std::pair<at::Tensor, at::Tensor> make_anchors(const std::vector<at::Tensor>& feats,
                                               const std::vector<double>& strides, double offset = 0.5);

/// Distances (l, t, r, b) to boxes around `anchor_points`: xywh when `xywh`, else xyxy
/// (Ultralytics' dist2bbox); `dim` is the coordinate dimension of `distance`.
at::Tensor dist2bbox(const at::Tensor& distance, const at::Tensor& anchor_points, bool xywh = true,
                     int64_t dim = -1);

}  // namespace yolotrain::nn
