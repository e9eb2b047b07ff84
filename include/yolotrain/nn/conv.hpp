#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>

namespace yolotrain::nn {

/// Options of Conv: Conv2d(c1 -> c2, k, s, padding, groups, dilation, no bias) -> BatchNorm2d -> SiLU.
struct ConvOptions {
  ConvOptions(int64_t c1, int64_t c2, int64_t k = 1, int64_t s = 1) : c1_(c1), c2_(c2), k_(k), s_(s) {}
  /// Input channels.
  TORCH_ARG(int64_t, c1);
  /// Output channels.
  TORCH_ARG(int64_t, c2);
  /// Kernel size.
  TORCH_ARG(int64_t, k);
  /// Stride.
  TORCH_ARG(int64_t, s);
  /// Padding; unset means Ultralytics' autopad: (d*(k-1)+1)/2 rounded down (k/2 when d is 1).
  TORCH_ARG(std::optional<int64_t>, p) = std::nullopt;
  /// Groups.
  TORCH_ARG(int64_t, g) = 1;
  /// Dilation.
  TORCH_ARG(int64_t, d) = 1;
  /// SiLU after the BatchNorm (true) or nothing (false).
  TORCH_ARG(bool, act) = true;
};

/// Ultralytics' Conv block. Children `conv`, `bn`, `act`, so the state-dict names are
/// `<prefix>.conv.weight`, `<prefix>.bn.weight`, ... as Ultralytics writes them. After fuse()
/// the BatchNorm is folded into `conv` (which then has a bias) and `bn` is gone, as in Ultralytics.
class ConvImpl : public torch::nn::Cloneable<ConvImpl> {
 public:
  ConvImpl(int64_t c1, int64_t c2, int64_t k = 1, int64_t s = 1) : ConvImpl(ConvOptions(c1, c2, k, s)) {}
  explicit ConvImpl(const ConvOptions& options);

  /// (Re)creates the layers from options().
  void reset() override;

  /// act(bn(conv(x))), or act(conv(x)) once fused.
  at::Tensor forward(const at::Tensor& x);

  /// Folds the BatchNorm into the convolution (for inference). Idempotent.
  void fuse();

  /// True once fuse() ran.
  bool fused() const { return fused_; }

  /// The options the block was built with.
  ConvOptions options;
  /// The convolution (no bias until fused).
  torch::nn::Conv2d conv{nullptr};
  /// The batch norm (empty once fused).
  torch::nn::BatchNorm2d bn{nullptr};
  /// The activation (SiLU; empty when options.act() is false).
  torch::nn::SiLU act{nullptr};
  /// True: a training forward adds 1 to the BatchNorm's num_batches_tracked, as BatchNorm2d's
  /// forward does. A DetectionModel sets it false on its Convs and adds 1 to all of them in one
  /// multi-tensor operator per forward (the same counts; one kernel instead of one per layer).
  bool counts_batches = true;

 private:
  bool fused_ = false;  // reset() (and so clone()) rebuilds the fused layout
};
TORCH_MODULE(Conv);

/// Ultralytics' DWConv(c1, c2, k, s, d, act): a Conv with groups gcd(c1, c2) (depthwise when
/// c1 == c2). Same children and state-dict names as Conv.
ConvOptions dwconv_options(int64_t c1, int64_t c2, int64_t k = 1, int64_t s = 1, int64_t d = 1, bool act = true);

/// Folds the BatchNorm of every Conv inside `module` (itself included) into its convolution
/// (Ultralytics' BaseModel.fuse() over Conv and DWConv). Idempotent.
void fuse_convs(torch::nn::Module& module);

/// Returns a Conv2d with bias whose output equals bn(conv(x)) in eval mode (Ultralytics'
/// fuse_conv_and_bn). The result does not require grad.
torch::nn::Conv2d fuse_conv_and_bn(const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn);

namespace detail {
/// When set, every convolution of yolotrain's modules adds its multiply-accumulates here
/// (out.numel() * Cin/groups * kh * kw). Used by count_flops(); thread-local.
double*& mac_counter();
/// Adds the MACs of `conv` producing `out` to mac_counter() when one is set.
void count_macs(const torch::nn::Conv2dImpl& conv, const at::Tensor& out);
/// conv.forward(x), its MACs counted; under CPU autocast, while autograd records, one with an odd
/// number of output channels runs in float32 (libtorch 2.6's bfloat16 backward for it is wrong:
/// src/nn/odd_channel_conv.cpp).
at::Tensor forward_conv(torch::nn::Conv2dImpl& conv, const at::Tensor& x);
/// BatchNorm2d's forward without adding to num_batches_tracked (bn.options.momentum() must be
/// set: then the count is not used); ConvImpl::counts_batches.
at::Tensor batch_norm_uncounted(torch::nn::BatchNorm2dImpl& bn, const at::Tensor& x);
}  // namespace detail

}  // namespace yolotrain::nn
