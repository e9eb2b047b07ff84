#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn {

/// Options of Bottleneck: Conv(c1 -> c_, k1) -> Conv(c_ -> c2, k2, groups g), c_ = int(c2 * e),
/// plus the input when `shortcut` and c1 == c2.
struct BottleneckOptions {
  BottleneckOptions(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) {}
  /// Input channels.
  TORCH_ARG(int64_t, c1);
  /// Output channels.
  TORCH_ARG(int64_t, c2);
  /// Residual connection (only used when c1 == c2).
  TORCH_ARG(bool, shortcut) = true;
  /// Groups of the second convolution.
  TORCH_ARG(int64_t, g) = 1;
  /// Kernel of the first convolution.
  TORCH_ARG(int64_t, k1) = 3;
  /// Kernel of the second convolution.
  TORCH_ARG(int64_t, k2) = 3;
  /// Hidden channels as a fraction of c2.
  TORCH_ARG(double, e) = 0.5;
};

/// Ultralytics' Bottleneck (children cv1, cv2).
class BottleneckImpl : public torch::nn::Cloneable<BottleneckImpl> {
 public:
  explicit BottleneckImpl(const BottleneckOptions& options);
  void reset() override;
  /// cv2(cv1(x)) (+ x when the block has a residual connection).
  at::Tensor forward(const at::Tensor& x);
  BottleneckOptions options;
  Conv cv1{nullptr};
  Conv cv2{nullptr};
  /// True when forward adds the input.
  bool add = false;
};
TORCH_MODULE(Bottleneck);

/// The blocks chained inside a C2f: C2f's own, or those of Ultralytics' C3k2 (YOLO11).
enum class C2fBlocks {
  Bottleneck,     ///< C2f: Bottleneck(c, c, shortcut, g, 3x3, 3x3, e = 1.0)
  C3k2,           ///< C3k2 with c3k false: Bottleneck(c, c, shortcut, g, 3x3, 3x3, e = 0.5)
  C3k2WithC3k,    ///< C3k2 with c3k true: C3k(c, c, n = 2, shortcut, g)
  C3k2WithAttn,   ///< C3k2 with attn true (8.4, YOLO26): Bottleneck(c, c, shortcut, g) then PSABlock(c, 0.5, c / 64)
};

/// Options of C2f: cv1 1x1 to 2c (c = int(c2 * e)), split in two, n blocks chained on the last
/// chunk, concat of all (2+n)c channels -> cv2 1x1 to c2. Ultralytics' C3k2 is this module with
/// other blocks in the chain (c3k2_options()).
struct C2fOptions {
  C2fOptions(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) {}
  /// Input channels.
  TORCH_ARG(int64_t, c1);
  /// Output channels.
  TORCH_ARG(int64_t, c2);
  /// Number of blocks.
  TORCH_ARG(int64_t, n) = 1;
  /// Residual connections in the blocks (Ultralytics' C2f: true in the backbone, false in the head).
  TORCH_ARG(bool, shortcut) = false;
  /// Groups of the blocks' convolutions.
  TORCH_ARG(int64_t, g) = 1;
  /// Hidden channels as a fraction of c2.
  TORCH_ARG(double, e) = 0.5;
  /// The blocks of the chain.
  TORCH_ARG(C2fBlocks, blocks) = C2fBlocks::Bottleneck;
};

/// Ultralytics' C3k2(c1, c2, n, c3k, e, attn, g, shortcut) of YOLO11 and YOLO26, as the C2f options it
/// amounts to (C3k2 subclasses C2f and replaces only its chain `m`; attn wins over c3k, as there).
C2fOptions c3k2_options(int64_t c1, int64_t c2, int64_t n = 1, bool c3k = false, double e = 0.5, int64_t g = 1,
                        bool shortcut = true, bool attn = false);

/// Ultralytics' C2f, and its C3k2 (children cv1, cv2, m).
class C2fImpl : public torch::nn::Cloneable<C2fImpl> {
 public:
  explicit C2fImpl(const C2fOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  C2fOptions options;
  /// Hidden channels (c in Ultralytics).
  int64_t c = 0;
  Conv cv1{nullptr};
  Conv cv2{nullptr};
  /// The chained blocks (Bottleneck or C3k), m.0 ... m.(n-1).
  torch::nn::Sequential m{nullptr};
};
TORCH_MODULE(C2f);

/// Options of C3k: Ultralytics' C3 with k x k bottlenecks: cv1 and cv2 1x1 to c_ = int(c2 * e),
/// n Bottlenecks (k x k, k x k, e = 1.0) on cv1's output, concat with cv2's -> cv3 1x1 to c2.
struct C3kOptions {
  C3kOptions(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) {}
  /// Input channels.
  TORCH_ARG(int64_t, c1);
  /// Output channels.
  TORCH_ARG(int64_t, c2);
  /// Number of bottlenecks.
  TORCH_ARG(int64_t, n) = 1;
  /// Residual connections in the bottlenecks.
  TORCH_ARG(bool, shortcut) = true;
  /// Groups of the bottlenecks' second convolution.
  TORCH_ARG(int64_t, g) = 1;
  /// Hidden channels as a fraction of c2.
  TORCH_ARG(double, e) = 0.5;
  /// Kernel of both bottleneck convolutions.
  TORCH_ARG(int64_t, k) = 3;
};

/// Ultralytics' C3k (children cv1, cv2, cv3, m).
class C3kImpl : public torch::nn::Cloneable<C3kImpl> {
 public:
  explicit C3kImpl(const C3kOptions& options);
  void reset() override;
  /// cv3(cat(m(cv1(x)), cv2(x))).
  at::Tensor forward(const at::Tensor& x);

  C3kOptions options;
  Conv cv1{nullptr};
  Conv cv2{nullptr};
  Conv cv3{nullptr};
  torch::nn::Sequential m{nullptr};
};
TORCH_MODULE(C3k);

/// Options of SPPF: cv1 to c1/2, MaxPool2d(k, 1, k/2) n times in a row, concat of n + 1 -> cv2,
/// plus the input when `shortcut` and c1 == c2 (Ultralytics 8.4's SPPF(c1, c2, k, n, shortcut)).
struct SPPFOptions {
  SPPFOptions(int64_t c1, int64_t c2) : c1_(c1), c2_(c2) {}
  /// Input channels.
  TORCH_ARG(int64_t, c1);
  /// Output channels.
  TORCH_ARG(int64_t, c2);
  /// Pooling kernel.
  TORCH_ARG(int64_t, k) = 5;
  /// Pooling repeats.
  TORCH_ARG(int64_t, n) = 3;
  /// Adds the input to the output (when c1 == c2).
  TORCH_ARG(bool, shortcut) = false;
  /// cv1's SiLU: Ultralytics up to 8.3 had it, 8.4.0 removed it (commit f2d3aed6) for every model.
  TORCH_ARG(bool, cv1_act) = false;
};

/// Ultralytics' SPPF (children cv1, cv2, m).
class SPPFImpl : public torch::nn::Cloneable<SPPFImpl> {
 public:
  explicit SPPFImpl(const SPPFOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  SPPFOptions options;
  Conv cv1{nullptr};
  Conv cv2{nullptr};
  torch::nn::MaxPool2d m{nullptr};
};
TORCH_MODULE(SPPF);

/// Concatenates its inputs along a dimension (Ultralytics' Concat). No parameters.
class ConcatImpl : public torch::nn::Cloneable<ConcatImpl> {
 public:
  explicit ConcatImpl(int64_t dimension = 1) : dimension(dimension) {}
  void reset() override {}
  at::Tensor forward(const std::vector<at::Tensor>& xs);
  /// The dimension to concatenate along.
  int64_t dimension;
};
TORCH_MODULE(Concat);

/// Upsampling by an integer factor, nearest neighbour (nn.Upsample(None, 2, "nearest")). No parameters.
class UpsampleImpl : public torch::nn::Cloneable<UpsampleImpl> {
 public:
  explicit UpsampleImpl(double scale_factor = 2.0) : scale_factor(scale_factor) {}
  void reset() override {}
  at::Tensor forward(const at::Tensor& x);
  /// The scale factor of both spatial dimensions.
  double scale_factor;
};
TORCH_MODULE(Upsample);

/// Distribution Focal Loss integral (Ultralytics' DFL): a fixed 1x1 conv (child `conv`, weight
/// arange(c1), no grad) that turns [B, 4*c1, A] side-major bin logits into [B, 4, A] expected
/// distances (softmax over the c1 bins, then the expectation).
class DFLImpl : public torch::nn::Cloneable<DFLImpl> {
 public:
  explicit DFLImpl(int64_t c1 = 16) : c1(c1) { reset(); }
  void reset() override;
  at::Tensor forward(const at::Tensor& x);
  /// Bins per side (reg_max).
  int64_t c1;
  torch::nn::Conv2d conv{nullptr};
};
TORCH_MODULE(DFL);

}  // namespace yolotrain::nn
