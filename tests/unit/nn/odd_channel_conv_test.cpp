// detail::forward_conv under CPU bfloat16 autocast (amp=bf16 on the CPU): the input gradient of a
// convolution with an odd number of output channels is right. Debian 13's libtorch 2.6 gets it
// wrong in bfloat16 on an AVX512-BF16 CPU (src/nn/odd_channel_conv.cpp); there this test fails
// without the float32 way round. Elsewhere it holds either way.
#include <ATen/ATen.h>
#include <torch/nn/modules/conv.h>

#include "yolotrain/nn.hpp"
#include "yolotrain/torch_compat.hpp"

#include "catch.hpp"

namespace nn = yolotrain::nn;
namespace tc = yolotrain::torch_compat;

namespace {

// CPU autocast to bfloat16 within a scope, as the trainer's AutocastScope (src/engine) sets it.
struct CpuBf16Autocast {
  CpuBf16Autocast() {
    tc::set_autocast_dtype(false, at::kBFloat16);
    tc::set_autocast_enabled(false, true);
  }
  ~CpuBf16Autocast() {
    tc::set_autocast_enabled(false, false);
    at::autocast::clear_cache();
  }
};

// The largest difference from the reference, relative to the reference's largest magnitude.
double relative_error(const at::Tensor& got, const at::Tensor& want) {
  return ((got.to(at::kDouble) - want).abs().max() / want.abs().max()).item<double>();
}

}  // namespace

TEST_CASE("under CPU bf16 autocast a convolution with an odd number of outputs gets its input gradient right", "[nn]") {
  at::manual_seed(0);
  for (const int64_t outputs : {1, 2, 3, 5, 17}) {
    for (const int64_t k : {1, 3}) {
      CAPTURE(outputs, k);
      torch::nn::Conv2d conv(torch::nn::Conv2dOptions(64, outputs, k).padding(k / 2));
      conv->weight.set_data(conv->weight.contiguous(at::MemoryFormat::ChannelsLast));  // as the trainer on the CPU
      const at::Tensor x0 = at::randn({4, 64, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);

      const at::Tensor x_ref = x0.to(at::kDouble).requires_grad_(true);
      at::conv2d(x_ref, conv->weight.to(at::kDouble), conv->bias.to(at::kDouble), 1, k / 2).square().mean().backward();

      const at::Tensor x = x0.clone().requires_grad_(true);
      at::Tensor y;
      {
        CpuBf16Autocast autocast;
        y = nn::detail::forward_conv(*conv, x);
      }
      CHECK(y.scalar_type() == at::kBFloat16);  // what autocast gives the next layer, as without the way round
      y.to(at::kFloat).square().mean().backward();
      CHECK(relative_error(x.grad(), x_ref.grad()) < 0.03);  // bfloat16's rounding: 0.7 % measured
    }
  }
}

TEST_CASE("forward_conv is the convolution itself outside autocast and without autograd", "[nn]") {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(8, 3, 3).padding(1));
  const at::Tensor x = at::randn({2, 8, 6, 6});
  CHECK(nn::detail::forward_conv(*conv, x).equal(conv->forward(x)));
  at::NoGradGuard no_grad;
  CpuBf16Autocast autocast;
  const at::Tensor y = nn::detail::forward_conv(*conv, x);
  CHECK(y.scalar_type() == at::kBFloat16);
  CHECK(y.equal(conv->forward(x)));
}
