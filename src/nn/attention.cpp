#include "yolotrain/nn/attention.hpp"

#include <ATen/ATen.h>

#include <cmath>

#include "yolotrain/error.hpp"

namespace yolotrain::nn {

AttentionImpl::AttentionImpl(const AttentionOptions& options_) : options(options_) { reset(); }

void AttentionImpl::reset() {
  const auto& o = options;
  if (o.num_heads() < 1 || o.dim() % o.num_heads() != 0) {
    throw Error("Attention: " + std::to_string(o.dim()) + " channels do not split into " +
                std::to_string(o.num_heads()) + " heads");
  }
  head_dim = o.dim() / o.num_heads();
  key_dim = static_cast<int64_t>(static_cast<double>(head_dim) * o.attn_ratio());
  if (key_dim < 1) throw Error("Attention: key_dim is 0 (head_dim " + std::to_string(head_dim) + ")");
  scale = std::pow(static_cast<double>(key_dim), -0.5);
  const int64_t h = o.dim() + 2 * key_dim * o.num_heads();
  qkv = register_module("qkv", Conv(ConvOptions(o.dim(), h, 1).act(false)));
  proj = register_module("proj", Conv(ConvOptions(o.dim(), o.dim(), 1).act(false)));
  pe = register_module("pe", Conv(ConvOptions(o.dim(), o.dim(), 3, 1).g(o.dim()).act(false)));
}

at::Tensor AttentionImpl::forward(const at::Tensor& x) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const auto parts = qkv->forward(x)
                         .view({b, options.num_heads(), 2 * key_dim + head_dim, h * w})
                         .split_with_sizes({key_dim, key_dim, head_dim}, 2);
  const at::Tensor& q = parts[0];
  const at::Tensor& k = parts[1];
  const at::Tensor& v = parts[2];
  const at::Tensor attn = (at::matmul(q.transpose(-2, -1), k) * scale).softmax(-1);
  const at::Tensor y = at::matmul(v, attn.transpose(-2, -1)).view({b, c, h, w}) + pe->forward(v.reshape({b, c, h, w}));
  return proj->forward(y);
}

PSABlockImpl::PSABlockImpl(const PSABlockOptions& options_) : options(options_) { reset(); }

void PSABlockImpl::reset() {
  const auto& o = options;
  attn =
      register_module("attn", Attention(AttentionOptions(o.c()).num_heads(o.num_heads()).attn_ratio(o.attn_ratio())));
  ffn = register_module("ffn", torch::nn::Sequential(Conv(ConvOptions(o.c(), 2 * o.c(), 1)),
                                                     Conv(ConvOptions(2 * o.c(), o.c(), 1).act(false))));
}

at::Tensor PSABlockImpl::forward(const at::Tensor& x) {
  at::Tensor y = options.shortcut() ? x + attn->forward(x) : attn->forward(x);
  return options.shortcut() ? y + ffn->forward(y) : ffn->forward(y);
}

C2PSAImpl::C2PSAImpl(const C2PSAOptions& options_) : options(options_) { reset(); }

void C2PSAImpl::reset() {
  const auto& o = options;
  if (o.c1() != o.c2()) {
    throw Error("C2PSA: input and output channels must be equal (Ultralytics asserts c1 == c2), got " +
                std::to_string(o.c1()) + " and " + std::to_string(o.c2()));
  }
  c = static_cast<int64_t>(static_cast<double>(o.c1()) * o.e());
  cv1 = register_module("cv1", Conv(ConvOptions(o.c1(), 2 * c, 1, 1)));
  cv2 = register_module("cv2", Conv(ConvOptions(2 * c, o.c1(), 1)));
  m = register_module("m", torch::nn::Sequential());
  for (int64_t i = 0; i < o.n(); ++i) m->push_back(PSABlock(PSABlockOptions(c).attn_ratio(0.5).num_heads(c / 64)));
}

at::Tensor C2PSAImpl::forward(const at::Tensor& x) {
  const auto ab = cv1->forward(x).split_with_sizes({c, c}, 1);
  return cv2->forward(at::cat({ab[0], m->forward(ab[1])}, 1));
}

}  // namespace yolotrain::nn
