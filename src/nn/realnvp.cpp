// RealNVP, the flow of YOLO26-pose's RLE loss: Ultralytics 8.4.117's block.py, transcribed.
#include "yolotrain/nn/realnvp.hpp"

#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <cmath>

namespace yolotrain::nn {
namespace {

constexpr int kLayers = 6;

torch::nn::Sequential coupling_net(bool tanh) {
  torch::nn::Sequential net(torch::nn::Linear(2, 64), torch::nn::SiLU(), torch::nn::Linear(64, 64), torch::nn::SiLU(),
                            torch::nn::Linear(64, 2));
  if (tanh) net->push_back(torch::nn::Tanh());
  return net;
}

}  // namespace

RealNVPImpl::RealNVPImpl() { reset(); }

void RealNVPImpl::reset() {
  loc = register_buffer("loc", at::zeros({2}));
  cov = register_buffer("cov", at::eye(2));
  const at::Tensor masks = at::tensor({0.f, 1.f, 1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 1.f, 1.f, 0.f});
  mask = register_buffer("mask", masks.view({kLayers, 2}));
  // Ultralytics: s = ModuleList(nets() for each mask), then t likewise; each Linear draws its
  // default init as built, then init_weights() redraws every weight (s's first, in module order).
  s = register_module("s", torch::nn::ModuleList());
  t = register_module("t", torch::nn::ModuleList());
  for (int i = 0; i < kLayers; ++i) s->push_back(coupling_net(true));
  for (int i = 0; i < kLayers; ++i) t->push_back(coupling_net(false));
  torch::NoGradGuard no_grad;
  for (const auto& m : modules(/*include_self=*/false)) {
    if (auto* linear = m->as<torch::nn::LinearImpl>()) torch::nn::init::xavier_uniform_(linear->weight, 0.01);
  }
}

std::pair<at::Tensor, at::Tensor> RealNVPImpl::backward_p(const at::Tensor& x) const {
  at::Tensor log_det = x.new_zeros({x.size(0)}), z = x;
  for (int i = kLayers - 1; i >= 0; --i) {
    const at::Tensor m = mask[i], keep = 1 - m;
    const at::Tensor z_ = m * z;
    const at::Tensor sc = s->ptr(i)->as<torch::nn::SequentialImpl>()->forward(z_) * keep;
    const at::Tensor tr = t->ptr(i)->as<torch::nn::SequentialImpl>()->forward(z_) * keep;
    z = keep * (z - tr) * at::exp(-sc) + z_;
    log_det = log_det - sc.sum(1);
  }
  return {z, log_det};
}

at::Tensor RealNVPImpl::log_prob(const at::Tensor& x) const {
  auto [z, log_det] = backward_p(x);
  // MultivariateNormal(loc 0, cov I).log_prob: -0.5 * (2 log(2 pi) + |z - loc|^2).
  const at::Tensor d = z - loc;
  const at::Tensor prior = -0.5 * (2 * std::log(2 * M_PI) + (d * d).sum(-1));
  return prior + log_det;
}

}  // namespace yolotrain::nn
