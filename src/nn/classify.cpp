#include "yolotrain/nn/classify.hpp"

#include <ATen/ATen.h>

#include "yolotrain/error.hpp"

namespace yolotrain::nn {

ClassifyImpl::ClassifyImpl(const ClassifyOptions& options_) : options(options_) { reset(); }

void ClassifyImpl::reset() {
  const auto& o = options;
  if (o.c1() < 1 || o.c2() < 1 || o.hidden() < 1) throw Error("Classify: channels and classes must be positive");
  auto conv_options = ConvOptions(o.c1(), o.hidden(), o.k(), o.s()).g(o.g());
  if (o.p()) conv_options.p(*o.p());
  conv = register_module("conv", Conv(conv_options));
  drop = register_module("drop", torch::nn::Dropout(torch::nn::DropoutOptions(0.0)));
  linear = register_module("linear", torch::nn::Linear(o.hidden(), o.c2()));
}

at::Tensor ClassifyImpl::forward(const at::Tensor& x) {
  at::Tensor pooled = at::adaptive_avg_pool2d(conv->forward(x), {1, 1}).flatten(1);
  if (double* counter = detail::mac_counter()) {  // the Linear's multiply-accumulates (thop counts them)
    *counter += static_cast<double>(pooled.size(0) * options.hidden() * options.c2());
  }
  return linear->forward(drop->forward(pooled));
}

at::Tensor ClassifyImpl::probabilities(const at::Tensor& logits) { return logits.softmax(1); }

}  // namespace yolotrain::nn
