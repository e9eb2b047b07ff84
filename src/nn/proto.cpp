#include "yolotrain/nn/proto.hpp"

#include <ATen/ATen.h>
#include <torch/nn/functional/upsampling.h>

#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::nn {
namespace {

// Multiply-accumulates of a transposed convolution: every input pixel meets the whole kernel.
void count_transposed_macs(const torch::nn::ConvTranspose2dImpl& conv, const at::Tensor& in) {
  double* counter = detail::mac_counter();
  if (counter == nullptr) return;
  const auto& w = conv.weight;  // [Cin, Cout, kh, kw]
  *counter += static_cast<double>(in.numel()) * static_cast<double>(w.size(1) * w.size(2) * w.size(3));
}

}  // namespace

ProtoImpl::ProtoImpl(const ProtoOptions& options_) : options(options_) { reset(); }

void ProtoImpl::reset() {
  const auto& o = options;
  if (o.ch().empty()) throw Error("Proto: needs at least one input level");
  if (o.hidden() < 1 || o.c2() < 1) throw Error("Proto: the hidden and output channels must be positive");
  // Proto26 calls Proto.__init__(c_, c_, c2): its cv1 reads the fused features (hidden channels).
  const int64_t c1 = o.multi_scale() ? o.hidden() : o.ch()[0];
  cv1 = register_module("cv1", Conv(ConvOptions(c1, o.hidden(), 3)));
  upsample = register_module(
      "upsample", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(o.hidden(), o.hidden(), 2).stride(2)));
  cv2 = register_module("cv2", Conv(ConvOptions(o.hidden(), o.hidden(), 3)));
  cv3 = register_module("cv3", Conv(ConvOptions(o.hidden(), o.c2())));
  feat_refine = nullptr;
  feat_fuse = nullptr;
  semseg = nullptr;
  if (!o.multi_scale()) return;
  feat_refine = register_module("feat_refine", torch::nn::ModuleList());
  for (size_t i = 1; i < o.ch().size(); ++i) feat_refine->push_back(Conv(ConvOptions(o.ch()[i], o.ch()[0])));
  feat_fuse = register_module("feat_fuse", Conv(ConvOptions(o.ch()[0], o.hidden(), 3)));
  semseg = register_module(
      "semseg",
      torch::nn::Sequential(Conv(ConvOptions(o.ch()[0], o.hidden(), 3)), Conv(ConvOptions(o.hidden(), o.hidden(), 3)),
                            torch::nn::Conv2d(torch::nn::Conv2dOptions(o.hidden(), o.nc(), 1))));
}

ProtoOutputs ProtoImpl::forward(const std::vector<at::Tensor>& xs) {
  const size_t levels = options.multi_scale() ? options.ch().size() : 1;
  if (xs.size() < levels) {
    throw Error("Proto: expected " + std::to_string(levels) + " feature levels, got " + std::to_string(xs.size()));
  }
  ProtoOutputs out;
  at::Tensor x = xs[0];
  if (options.multi_scale()) {
    // Proto26: P4, P5 refined to P3's channels and upsampled by 2, 4 (nearest), summed onto P3.
    for (size_t i = 0; i < feat_refine->size(); ++i) {
      const double scale = static_cast<double>(int64_t{2} << i);
      x = x + torch::nn::functional::interpolate(
                  feat_refine[i]->as<ConvImpl>()->forward(xs[i + 1]),
                  torch::nn::functional::InterpolateFuncOptions().scale_factor(std::vector<double>{scale, scale}).mode(
                      torch::kNearest));
    }
    if (is_training()) {
      at::Tensor s = x;
      for (const auto& m : semseg->children()) {
        if (auto* conv = m->as<ConvImpl>()) s = conv->forward(s);
        else if (auto* last = m->as<torch::nn::Conv2dImpl>()) s = detail::forward_conv(*last, s);
      }
      out.semantic = s;
    }
    x = feat_fuse->forward(x);
  }
  const at::Tensor y = cv1->forward(x);
  at::Tensor up = upsample->forward(y);
  count_transposed_macs(*upsample, y);
  out.proto = cv3->forward(cv2->forward(up));
  return out;
}

}  // namespace yolotrain::nn
