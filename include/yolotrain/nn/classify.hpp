#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>

#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn {

/// Options of Classify: Ultralytics' Classify(c1, c2, k=1, s=1, p=None, g=1).
struct ClassifyOptions {
  ClassifyOptions(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) {}
  /// Channels of the input feature map.
  TORCH_ARG(int64_t, c1);
  /// Classes (the row's nc; never scaled by width).
  TORCH_ARG(int64_t, c2);
  /// The Conv's kernel, stride, padding and groups.
  TORCH_ARG(int64_t, k) = 1;
  TORCH_ARG(int64_t, s) = 1;
  TORCH_ARG(std::optional<int64_t>, p) = std::nullopt;
  TORCH_ARG(int64_t, g) = 1;
  /// The Conv's output channels (Ultralytics' c_ = 1280, "efficientnet_b0 size").
  TORCH_ARG(int64_t, hidden) = 1280;
};

/// Ultralytics' Classify head: children `conv` (Conv c1 -> 1280), `drop` (Dropout, p 0 unless a run's
/// dropout= sets it) and `linear` (Linear 1280 -> c2), with global average pooling between conv and
/// drop; so a -cls model's state dict ends in `model.N.conv.*` and `model.N.linear.weight/bias`.
class ClassifyImpl : public torch::nn::Cloneable<ClassifyImpl> {
 public:
  explicit ClassifyImpl(const ClassifyOptions& options);
  void reset() override;

  /// The class logits [B, c2] (Ultralytics' training output).
  at::Tensor forward(const at::Tensor& x);
  /// Probabilities, softmax over the logits (Ultralytics' eval and export output).
  static at::Tensor probabilities(const at::Tensor& logits);

  ClassifyOptions options;
  Conv conv{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::Linear linear{nullptr};
};
TORCH_MODULE(Classify);

}  // namespace yolotrain::nn
