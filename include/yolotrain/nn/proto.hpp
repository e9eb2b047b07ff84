#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn {

/// Options of Proto: the mask prototypes of a segmentation head (Ultralytics' Proto, or Proto26 when
/// `multi_scale`).
struct ProtoOptions {
  ProtoOptions(std::vector<int64_t> ch, int64_t hidden, int64_t c2) : ch_(std::move(ch)), hidden_(hidden), c2_(c2) {}
  /// Channels of the head's input levels (Proto reads the first; Proto26 all of them).
  TORCH_ARG(std::vector<int64_t>, ch);
  /// Hidden channels (Ultralytics' c_: the head's npr).
  TORCH_ARG(int64_t, hidden);
  /// Prototypes made (the head's nm).
  TORCH_ARG(int64_t, c2);
  /// Classes of Proto26's semantic branch.
  TORCH_ARG(int64_t, nc) = 80;
  /// YOLO26-seg's Proto26: every level refined to ch[0] channels, upsampled to P3 and summed, then
  /// `feat_fuse`; a semantic-segmentation branch (`semseg`) trained beside it.
  TORCH_ARG(bool, multi_scale) = false;
};

/// What Proto gives: the prototypes [B, c2, 2*H3, 2*W3] and, for Proto26 in training, the semantic
/// logits [B, nc, H3, W3] (undefined otherwise).
struct ProtoOutputs {
  at::Tensor proto;
  at::Tensor semantic;
};

/// Ultralytics' Proto: children `cv1` (Conv 3x3 -> hidden), `upsample` (ConvTranspose2d 2x2 stride 2,
/// with bias), `cv2` (Conv 3x3), `cv3` (Conv 1x1 -> c2). Proto26 (multi_scale) has cv1 from hidden
/// and adds `feat_refine` (Conv 1x1 -> ch[0] per level above P3), `feat_fuse` (Conv 3x3 ch[0] ->
/// hidden) and `semseg` (Conv 3x3, Conv 3x3, Conv2d 1x1 -> nc), in Ultralytics' order of registration.
class ProtoImpl : public torch::nn::Cloneable<ProtoImpl> {
 public:
  explicit ProtoImpl(const ProtoOptions& options);
  void reset() override;

  /// The prototypes from the head's input levels; the semantic logits too for Proto26 in training.
  ProtoOutputs forward(const std::vector<at::Tensor>& xs);

  ProtoOptions options;
  Conv cv1{nullptr};
  torch::nn::ConvTranspose2d upsample{nullptr};
  Conv cv2{nullptr};
  Conv cv3{nullptr};
  torch::nn::ModuleList feat_refine{nullptr};
  Conv feat_fuse{nullptr};
  torch::nn::Sequential semseg{nullptr};
};
TORCH_MODULE(Proto);

}  // namespace yolotrain::nn
