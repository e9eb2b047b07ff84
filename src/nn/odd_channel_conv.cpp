// detail::forward_conv: a convolution's forward, with a way around a wrong bfloat16 backward.
//
// Debian 13's libtorch 2.6 (with its oneDNN 3.7) computes a wrong input gradient for a bfloat16
// channels-last convolution with an odd number of output channels, on a CPU with AVX512-BF16
// (measured on an AMD EPYC here: relative error 0.25 to 3e37 against an unfold-and-matmul
// reference in double, for 1, 3, 5, ..., 33 output channels, 1x1 and 3x3; even counts agree within
// 0.7 %). oneDNN's backward-data kernel takes the weights in pairs of output channels
// (ABcd64b2a) and the padding channel is not zeroed, so the result changes from run to run and is
// often NaN. Debian 12's libtorch 1.13 is right. A detection head's class convolution has nc
// outputs, so amp=bf16 on the CPU trained any odd-class dataset (single_cls=true among them) on
// garbage gradients and stopped with "the gradient norm was NaN/Inf ... 3 roll-backs did not help".
//
// Under CPU autocast (amp=bf16 on the CPU), while autograd records, a convolution with an odd number
// of output channels therefore runs in float32, its result cast to autocast's type as autocast
// would have given it. Only the heads' last convolutions are odd in the YOLO models, so the cost is
// nil. Measured, and how: docs/build.md "Debian 13's bfloat16 convolution".
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "yolotrain/nn/conv.hpp"
#include "yolotrain/torch_compat.hpp"

namespace yolotrain::nn::detail {
namespace {

bool odd_output_under_cpu_autocast(const torch::nn::Conv2dImpl& conv, const at::Tensor& x) {
  return x.is_cpu() && at::GradMode::is_enabled() && conv.options.out_channels() % 2 == 1 &&
         torch_compat::autocast_enabled(/*cuda=*/false);
}

}  // namespace

at::Tensor forward_conv(torch::nn::Conv2dImpl& conv, const at::Tensor& x) {
  at::Tensor y;
  if (odd_output_under_cpu_autocast(conv, x)) {
    const at::ScalarType type = torch_compat::autocast_dtype(/*cuda=*/false);
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
    y = conv.forward(x.to(at::kFloat)).to(type);
  } else {
    y = conv.forward(x);
  }
  count_macs(conv, y);
  return y;
}

}  // namespace yolotrain::nn::detail
