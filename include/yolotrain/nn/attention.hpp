#pragma once

// YOLO11's position-sensitive attention: Attention, PSABlock and C2PSA (Ultralytics 8.3,
// nn/modules/block.py), with Ultralytics' children, so state-dict names are Ultralytics'.

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn {

/// Options of Attention: multi-head self-attention over the H*W positions of a feature map.
struct AttentionOptions {
  explicit AttentionOptions(int64_t dim) : dim_(dim) {}
  /// Channels in and out.
  TORCH_ARG(int64_t, dim);
  /// Heads; head_dim = dim / num_heads.
  TORCH_ARG(int64_t, num_heads) = 8;
  /// key_dim = int(head_dim * attn_ratio).
  TORCH_ARG(double, attn_ratio) = 0.5;
};

/// Ultralytics' Attention (children qkv, proj, pe). qkv is a 1x1 Conv without activation to
/// dim + 2 * key_dim * num_heads channels laid out per head as [q key_dim | k key_dim | v head_dim];
/// out = proj(v @ softmax(q^T k * key_dim^-0.5)^T + pe(v)), pe a depthwise 3x3 Conv without
/// activation (the positional encoding), proj a 1x1 Conv without activation.
class AttentionImpl : public torch::nn::Cloneable<AttentionImpl> {
 public:
  explicit AttentionImpl(const AttentionOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  AttentionOptions options;
  int64_t head_dim = 0;
  int64_t key_dim = 0;
  /// key_dim ** -0.5.
  double scale = 1.0;
  Conv qkv{nullptr};
  Conv proj{nullptr};
  Conv pe{nullptr};
};
TORCH_MODULE(Attention);

/// Options of PSABlock: x + attn(x), then x + ffn(x) (without `shortcut`, no additions).
struct PSABlockOptions {
  explicit PSABlockOptions(int64_t c) : c_(c) {}
  /// Channels in and out.
  TORCH_ARG(int64_t, c);
  TORCH_ARG(double, attn_ratio) = 0.5;
  TORCH_ARG(int64_t, num_heads) = 4;
  TORCH_ARG(bool, shortcut) = true;
};

/// Ultralytics' PSABlock (children attn, ffn; ffn = Conv(c, 2c, 1) -> Conv(2c, c, 1, act=False)).
class PSABlockImpl : public torch::nn::Cloneable<PSABlockImpl> {
 public:
  explicit PSABlockImpl(const PSABlockOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  PSABlockOptions options;
  Attention attn{nullptr};
  torch::nn::Sequential ffn{nullptr};
};
TORCH_MODULE(PSABlock);

/// Options of C2PSA: cv1 1x1 to 2c (c = int(c1 * e)), split; the second half through n PSABlocks
/// (num_heads = c / 64); concat -> cv2 1x1 to c1. Ultralytics requires c1 == c2.
struct C2PSAOptions {
  C2PSAOptions(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) {}
  TORCH_ARG(int64_t, c1);
  TORCH_ARG(int64_t, c2);
  TORCH_ARG(int64_t, n) = 1;
  TORCH_ARG(double, e) = 0.5;
};

/// Ultralytics' C2PSA (children cv1, cv2, m).
class C2PSAImpl : public torch::nn::Cloneable<C2PSAImpl> {
 public:
  explicit C2PSAImpl(const C2PSAOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  C2PSAOptions options;
  /// Hidden channels (c in Ultralytics).
  int64_t c = 0;
  Conv cv1{nullptr};
  Conv cv2{nullptr};
  torch::nn::Sequential m{nullptr};
};
TORCH_MODULE(C2PSA);

}  // namespace yolotrain::nn
