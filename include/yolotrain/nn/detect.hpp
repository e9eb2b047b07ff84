#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "yolotrain/nn/anchors.hpp"
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
  /// YOLOv8's class branch (true) or YOLO11's (false: DWConv 3x3 -> Conv 1x1, twice, then the
  /// 1x1 Conv2d). Ultralytics' parse_model sets it false when the model has a C3k2.
  TORCH_ARG(bool, legacy) = true;
};

/// Ultralytics' Detect head. Children `cv2` (box branch per level: Conv3x3, Conv3x3, Conv2d 1x1 ->
/// 4*reg_max), `cv3` (class branch: Conv3x3, Conv3x3, Conv2d 1x1 -> nc; not legacy:
/// [DWConv3x3, Conv1x1], [DWConv3x3, Conv1x1], Conv2d 1x1 -> nc) and `dfl`.
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

}  // namespace yolotrain::nn
