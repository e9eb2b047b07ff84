#include "musgd.hpp"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "yolotrain/lifecycle/checkpoint/optimizer_state_key.hpp"

namespace yolotrain::engine {

namespace {

// bfloat16 arithmetic as libtorch 2.x's kernels do it: each operation computed in float32 on the
// bfloat16 operands and rounded to bfloat16 once. libtorch 1.13's CPU baddbmm rounds its
// intermediates too (its Newton-Schulz differs from 2.6's by up to 0.07); this gives 2.6's bits
// (checked equal on both: scripts/ultralytics84_musgd.py, docs/engine.md "MuSGD").
torch::Tensor bf16(const torch::Tensor& float32) { return float32.to(torch::kBFloat16); }

}  // namespace

torch::Tensor zeropower_via_newtonschulz5(const torch::Tensor& g, double eps) {
  const int64_t rows = g.size(-2), cols = g.size(-1);
  torch::Tensor x = bf16(g.reshape({-1, rows, cols}));
  const torch::Tensor norm = bf16(at::linalg_norm(x.to(torch::kFloat), c10::nullopt, {-2, -1}, /*keepdim=*/true));
  x = bf16(x.to(torch::kFloat) / bf16(norm.to(torch::kFloat) + eps).to(torch::kFloat));
  if (rows > cols) x = x.transpose(-2, -1);
  const double a = 3.4445, b = -4.7750, c = 2.0315;
  for (int i = 0; i < 5; ++i) {
    const torch::Tensor xf = x.to(torch::kFloat);
    const torch::Tensor gram = bf16(xf.matmul(xf.transpose(-2, -1))).to(torch::kFloat);
    const torch::Tensor poly = bf16(at::baddbmm(gram, gram, gram, /*beta=*/b, /*alpha=*/c)).to(torch::kFloat);
    x = bf16(at::baddbmm(xf, poly, xf, /*beta=*/a));
  }
  if (rows > cols) x = x.transpose(-2, -1);
  return x.reshape(g.sizes());
}

std::vector<torch::Tensor> muon_update(const std::vector<torch::Tensor>& grads, std::vector<torch::Tensor>& momentums,
                                       double beta, bool nesterov) {
  // The momentum, as multi-tensor operators (the per-tensor mul_/add_ on the CPU: the same bits).
  at::_foreach_mul_(momentums, beta);
  at::_foreach_add_(momentums, grads, 1 - beta);
  std::vector<torch::Tensor> updates = momentums;
  if (nesterov) {
    updates = at::_foreach_mul(momentums, beta);
    at::_foreach_add_(updates, grads, 1 - beta);
  }
  // Batches of matrices with equal rows (after transposing to rows <= columns) and equal scale,
  // in first-seen order as Ultralytics' dict keeps them.
  struct Item {
    std::size_t index;
    torch::Tensor matrix;
    bool transposed;
  };
  std::vector<std::tuple<int64_t, double, std::vector<Item>>> buckets;
  for (std::size_t i = 0; i < updates.size(); ++i) {
    torch::Tensor m = updates[i].dim() > 2 ? updates[i].reshape({updates[i].size(0), -1}) : updates[i];
    const bool transposed = m.size(0) > m.size(1);
    if (transposed) m = m.transpose(0, 1);
    const double scale = std::sqrt(std::max(1.0, double(grads[i].size(-2)) / double(grads[i].size(-1))));
    auto it = std::find_if(buckets.begin(), buckets.end(), [&](const auto& bucket) {
      return std::get<0>(bucket) == m.size(0) && std::get<1>(bucket) == scale;
    });
    if (it == buckets.end()) it = buckets.insert(buckets.end(), {m.size(0), scale, {}});
    std::get<2>(*it).push_back({i, m, transposed});
  }
  for (auto& [rows, scale, items] : buckets) {
    int64_t n = 0;
    for (const Item& item : items) n = std::max(n, item.matrix.size(1));
    std::vector<torch::Tensor> padded;  // zero columns only where a matrix is narrower (stack copies anyway)
    for (const Item& item : items) {
      const int64_t pad = n - item.matrix.size(1);
      padded.push_back(pad > 0 ? at::constant_pad_nd(item.matrix, {0, pad}) : item.matrix);
    }
    const torch::Tensor x =
        zeropower_via_newtonschulz5(torch::stack(padded)).to(grads[items[0].index].scalar_type()).mul_(scale);
    for (std::size_t j = 0; j < items.size(); ++j) {
      const Item& item = items[j];
      const torch::Tensor u = x[static_cast<int64_t>(j)].slice(1, 0, item.matrix.size(1));
      updates[item.index] = (item.transposed ? u.t() : u).reshape(grads[item.index].sizes());
    }
  }
  return updates;
}

MuSGD::MuSGD(std::vector<torch::optim::OptimizerParamGroup> groups, double muon, double sgd)
    : torch::optim::Optimizer(std::move(groups), std::make_unique<MuSGDOptions>()), muon_(muon), sgd_(sgd) {}

torch::Tensor MuSGD::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const MuSGDOptions&>(group.options());
    std::vector<torch::Tensor> params;
    for (auto& p : group.params()) {
      if (p.grad().defined()) params.push_back(p);
    }
    if (params.empty()) continue;
    std::vector<MuSGDParamState*> states;
    for (auto& p : params) {
      auto& slot = state_[lifecycle::optimizer_state_key(state_, p)];
      if (!slot) {
        auto st = std::make_unique<MuSGDParamState>();
        st->momentum_buffer(torch::zeros_like(p));
        if (o.use_muon()) st->momentum_buffer_sgd(torch::zeros_like(p));
        slot = std::move(st);
      }
      states.push_back(static_cast<MuSGDParamState*>(slot.get()));
    }
    double lr = o.lr();
    std::vector<torch::Tensor> buffers;
    if (o.use_muon()) {
      std::vector<torch::Tensor> grads, momentums;
      for (std::size_t i = 0; i < params.size(); ++i) {
        grads.push_back(params[i].grad());
        momentums.push_back(states[i]->momentum_buffer());
      }
      const auto updates = muon_update(grads, momentums, o.momentum(), o.nesterov());
      at::_foreach_add_(params, updates, -(lr * muon_));
      for (auto* st : states) buffers.push_back(st->momentum_buffer_sgd());
      lr *= sgd_;
    } else {
      for (auto* st : states) buffers.push_back(st->momentum_buffer());
    }
    // SGD with momentum (dampening 0), as multi-tensor operators.
    std::vector<torch::Tensor> grads;
    for (const auto& p : params) grads.push_back(p.grad());
    if (o.weight_decay() != 0) grads = at::_foreach_add(grads, params, o.weight_decay());
    at::_foreach_mul_(buffers, o.momentum());
    at::_foreach_add_(buffers, grads);
    at::_foreach_add_(params, o.nesterov() ? at::_foreach_add(grads, buffers, o.momentum()) : buffers, -lr);
  }
  return loss;
}

}  // namespace yolotrain::engine
