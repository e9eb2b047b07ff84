#include "yolotrain/nn/conv.hpp"

#include <torch/nn/functional/conv.h>

#include <numeric>

#include "yolotrain/error.hpp"

namespace yolotrain::nn {

ConvImpl::ConvImpl(const ConvOptions& options_) : options(options_) { reset(); }

void ConvImpl::reset() {
  const auto& o = options;
  if (o.c1() <= 0 || o.c2() <= 0 || o.k() <= 0 || o.s() <= 0 || o.g() <= 0 || o.d() <= 0) {
    throw Error("Conv: channels, kernel, stride, groups and dilation must be positive (got c1=" +
                std::to_string(o.c1()) + " c2=" + std::to_string(o.c2()) + " k=" + std::to_string(o.k()) +
                " s=" + std::to_string(o.s()) + ")");
  }
  const int64_t pad = o.p().value_or((o.d() * (o.k() - 1) + 1) / 2);
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.c1(), o.c2(), o.k())
                                                       .stride(o.s())
                                                       .padding(pad)
                                                       .groups(o.g())
                                                       .dilation(o.d())
                                                       .bias(fused_)));
  bn = nullptr;
  if (!fused_) bn = register_module("bn", torch::nn::BatchNorm2d(o.c2()));
  act = nullptr;
  if (o.act()) act = register_module("act", torch::nn::SiLU());
}

at::Tensor ConvImpl::forward(const at::Tensor& x) {
  at::Tensor y = detail::forward_conv(*conv, x);
  if (bn) y = counts_batches || !bn->options.momentum() ? bn->forward(y) : detail::batch_norm_uncounted(*bn, y);
  if (!act) return y;
  // Without autograd, in place (Ultralytics' activations are inplace=True): one tensor less per layer.
  if (!at::GradMode::is_enabled()) return at::silu_(y);
  return act->forward(y);
}

namespace detail {

// BatchNorm2dImpl::forward without its `num_batches_tracked += 1` (its momentum is set, so the
// count does not enter the arithmetic): the same call to at::batch_norm.
at::Tensor batch_norm_uncounted(torch::nn::BatchNorm2dImpl& bn, const at::Tensor& x) {
  const bool use_batch = bn.is_training() || !bn.options.track_running_stats();
  return at::batch_norm(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, use_batch, *bn.options.momentum(),
                        bn.options.eps(), at::globalContext().userEnabledCuDNN());
}

}  // namespace detail

void ConvImpl::fuse() {
  if (fused_) return;
  conv = replace_module("conv", fuse_conv_and_bn(conv, bn));
  unregister_module("bn");
  bn = nullptr;
  fused_ = true;
}

ConvOptions dwconv_options(int64_t c1, int64_t c2, int64_t k, int64_t s, int64_t d, bool act) {
  return ConvOptions(c1, c2, k, s).g(std::gcd(c1, c2)).d(d).act(act);
}

void fuse_convs(torch::nn::Module& module) {
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (auto* conv = m->as<ConvImpl>()) conv->fuse();
  }
}

torch::nn::Conv2d fuse_conv_and_bn(const torch::nn::Conv2d& conv, const torch::nn::BatchNorm2d& bn) {
  torch::NoGradGuard no_grad;
  const auto& c = conv->options;
  torch::nn::Conv2d fused(torch::nn::Conv2dOptions(c.in_channels(), c.out_channels(), c.kernel_size())
                              .stride(c.stride())
                              .padding(c.padding())
                              .dilation(c.dilation())
                              .groups(c.groups())
                              .bias(true));
  fused->to(conv->weight.device(), conv->weight.scalar_type());
  const at::Tensor scale = bn->weight / at::sqrt(bn->running_var + bn->options.eps());
  const at::Tensor w = conv->weight;
  fused->weight.copy_(w * scale.view({-1, 1, 1, 1}));
  const at::Tensor b = conv->bias.defined() ? conv->bias : at::zeros_like(bn->running_mean);
  fused->bias.copy_((b - bn->running_mean) * scale + bn->bias);
  fused->weight.set_requires_grad(false);
  fused->bias.set_requires_grad(false);
  return fused;
}

namespace detail {

double*& mac_counter() {
  thread_local double* counter = nullptr;
  return counter;
}

void count_macs(const torch::nn::Conv2dImpl& conv, const at::Tensor& out) {
  double* counter = mac_counter();
  if (counter == nullptr) return;
  const auto& w = conv.weight;  // [Cout, Cin/groups, kh, kw]
  *counter += static_cast<double>(out.numel()) * static_cast<double>(w.size(1) * w.size(2) * w.size(3));
}

}  // namespace detail
}  // namespace yolotrain::nn
