#include "yolotrain/nn/block.hpp"

#include <ATen/ATen.h>
#include <torch/nn/functional/upsampling.h>

#include "yolotrain/error.hpp"
#include "yolotrain/nn/attention.hpp"

namespace yolotrain::nn {

BottleneckImpl::BottleneckImpl(const BottleneckOptions& options_) : options(options_) { reset(); }

void BottleneckImpl::reset() {
  const auto& o = options;
  const auto hidden = static_cast<int64_t>(static_cast<double>(o.c2()) * o.e());
  cv1 = register_module("cv1", Conv(ConvOptions(o.c1(), hidden, o.k1(), 1)));
  cv2 = register_module("cv2", Conv(ConvOptions(hidden, o.c2(), o.k2(), 1).g(o.g())));
  add = o.shortcut() && o.c1() == o.c2();
}

at::Tensor BottleneckImpl::forward(const at::Tensor& x) {
  at::Tensor y = cv2->forward(cv1->forward(x));
  return add ? x + y : y;
}

C2fOptions c3k2_options(int64_t c1, int64_t c2, int64_t n, bool c3k, double e, int64_t g, bool shortcut, bool attn) {
  const C2fBlocks blocks = attn ? C2fBlocks::C3k2WithAttn : c3k ? C2fBlocks::C3k2WithC3k : C2fBlocks::C3k2;
  return C2fOptions(c1, c2).n(n).e(e).g(g).shortcut(shortcut).blocks(blocks);
}

namespace {

// C3k2's attention block (8.4): nn.Sequential(Bottleneck, PSABlock), its children named 0 and 1
// as there (libtorch's Sequential cannot sit inside the chain, whose elements need one forward).
class BottleneckAttnImpl : public torch::nn::Cloneable<BottleneckAttnImpl> {
 public:
  BottleneckAttnImpl(int64_t c, bool shortcut, int64_t g) : c_(c), shortcut_(shortcut), g_(g) { reset(); }
  void reset() override {
    bottleneck = register_module("0", Bottleneck(BottleneckOptions(c_, c_).shortcut(shortcut_).g(g_).e(0.5)));
    psa = register_module("1", PSABlock(PSABlockOptions(c_).attn_ratio(0.5).num_heads(std::max<int64_t>(c_ / 64, 1))));
  }
  at::Tensor forward(const at::Tensor& x) { return psa->forward(bottleneck->forward(x)); }

 private:
  int64_t c_;
  bool shortcut_;
  int64_t g_;
  Bottleneck bottleneck{nullptr};
  PSABlock psa{nullptr};
};
TORCH_MODULE(BottleneckAttn);

}  // namespace

C2fImpl::C2fImpl(const C2fOptions& options_) : options(options_) { reset(); }

void C2fImpl::reset() {
  const auto& o = options;
  c = static_cast<int64_t>(static_cast<double>(o.c2()) * o.e());
  cv1 = register_module("cv1", Conv(ConvOptions(o.c1(), 2 * c, 1, 1)));
  cv2 = register_module("cv2", Conv(ConvOptions((2 + o.n()) * c, o.c2(), 1, 1)));
  m = register_module("m", torch::nn::Sequential());
  const double bottleneck_e = o.blocks() == C2fBlocks::C3k2 ? 0.5 : 1.0;  // C3k2's Bottleneck(c, c) default
  for (int64_t i = 0; i < o.n(); ++i) {
    if (o.blocks() == C2fBlocks::C3k2WithC3k) {
      m->push_back(C3k(C3kOptions(c, c).n(2).shortcut(o.shortcut()).g(o.g())));
    } else if (o.blocks() == C2fBlocks::C3k2WithAttn) {
      m->push_back(BottleneckAttn(c, o.shortcut(), o.g()));
    } else {
      m->push_back(Bottleneck(BottleneckOptions(c, c).shortcut(o.shortcut()).g(o.g()).e(bottleneck_e)));
    }
  }
}

at::Tensor C2fImpl::forward(const at::Tensor& x) {
  std::vector<at::Tensor> y = cv1->forward(x).chunk(2, 1);
  for (auto& block : *m) y.push_back(block.forward(y.back()));
  return cv2->forward(at::cat(y, 1));
}

C3kImpl::C3kImpl(const C3kOptions& options_) : options(options_) { reset(); }

void C3kImpl::reset() {
  const auto& o = options;
  const auto hidden = static_cast<int64_t>(static_cast<double>(o.c2()) * o.e());
  cv1 = register_module("cv1", Conv(ConvOptions(o.c1(), hidden, 1, 1)));
  cv2 = register_module("cv2", Conv(ConvOptions(o.c1(), hidden, 1, 1)));
  cv3 = register_module("cv3", Conv(ConvOptions(2 * hidden, o.c2(), 1, 1)));
  m = register_module("m", torch::nn::Sequential());
  for (int64_t i = 0; i < o.n(); ++i) {
    m->push_back(Bottleneck(
        BottleneckOptions(hidden, hidden).shortcut(o.shortcut()).g(o.g()).k1(o.k()).k2(o.k()).e(1.0)));
  }
}

at::Tensor C3kImpl::forward(const at::Tensor& x) {
  return cv3->forward(at::cat({m->forward(cv1->forward(x)), cv2->forward(x)}, 1));
}

SPPFImpl::SPPFImpl(const SPPFOptions& options_) : options(options_) { reset(); }

void SPPFImpl::reset() {
  const auto& o = options;
  const int64_t hidden = o.c1() / 2;
  if (o.n() < 1) throw Error("SPPF: the pooling repeats n must be at least 1, got " + std::to_string(o.n()));
  cv1 = register_module("cv1", Conv(ConvOptions(o.c1(), hidden, 1, 1).act(o.cv1_act())));
  cv2 = register_module("cv2", Conv(ConvOptions(hidden * (o.n() + 1), o.c2(), 1, 1)));
  m = register_module("m", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(o.k()).stride(1).padding(o.k() / 2)));
}

at::Tensor SPPFImpl::forward(const at::Tensor& x) {
  std::vector<at::Tensor> y{cv1->forward(x)};
  for (int64_t i = 0; i < options.n(); ++i) y.push_back(m->forward(y.back()));
  at::Tensor out = cv2->forward(at::cat(y, 1));
  return options.shortcut() && options.c1() == options.c2() ? out + x : out;
}

at::Tensor ConcatImpl::forward(const std::vector<at::Tensor>& xs) { return at::cat(xs, dimension); }

at::Tensor UpsampleImpl::forward(const at::Tensor& x) {
  namespace F = torch::nn::functional;
  return F::interpolate(x, F::InterpolateFuncOptions()
                               .scale_factor(std::vector<double>{scale_factor, scale_factor})
                               .mode(torch::kNearest));
}

void DFLImpl::reset() {
  if (c1 <= 0) throw Error("DFL: the number of bins must be positive, got " + std::to_string(c1));
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(c1, 1, 1).bias(false)));
  torch::NoGradGuard no_grad;
  conv->weight.copy_(at::arange(c1, at::kFloat).view({1, c1, 1, 1}));
  conv->weight.set_requires_grad(false);
}

at::Tensor DFLImpl::forward(const at::Tensor& x) {
  const int64_t b = x.size(0), a = x.size(2);
  const at::Tensor y = detail::forward_conv(*conv, x.view({b, 4, c1, a}).transpose(2, 1).softmax(1));
  return y.view({b, 4, a});
}

}  // namespace yolotrain::nn
