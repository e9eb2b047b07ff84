#include "foreach_optimizers.hpp"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "optimizer_params.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::engine {
namespace {

using detail::state_of;
using detail::trainable;
using detail::Trainable;
using TensorList = std::vector<at::Tensor>;

// The closure's loss, computed with gradients on, as libtorch's step() does.
at::Tensor closure_loss(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  at::AutoGradMode enable(true);
  return closure();
}

// SGD on one group (libtorch's SGD::step): d_p = grad + wd * p; buf = momentum * buf +
// (1 - dampening) * d_p, or d_p itself the first time; d_p = nesterov ? d_p + momentum * buf : buf;
// p -= lr * d_p.
template <typename StateMap>
void sgd_group(torch::optim::OptimizerParamGroup& group, StateMap& states) {
  const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
  Trainable t = trainable(group.params());
  if (t.params.empty()) return;
  TensorList d_p = o.weight_decay() != 0 ? at::_foreach_add(t.grads, t.params, o.weight_decay()) : t.grads;
  if (o.momentum() != 0) {
    TensorList bufs, old_bufs, old_d_p;
    for (std::size_t i = 0; i < t.params.size(); ++i) {
      bool fresh = false;
      auto& st = state_of<torch::optim::SGDParamState>(states, t.params[i], [&] {
        fresh = true;
        auto s = std::make_unique<torch::optim::SGDParamState>();
        s->momentum_buffer(at::clone(d_p[i]).detach());
        return s;
      });
      bufs.push_back(st.momentum_buffer());
      if (!fresh) {
        old_bufs.push_back(st.momentum_buffer());
        old_d_p.push_back(d_p[i]);
      }
    }
    if (!old_bufs.empty()) {
      at::_foreach_mul_(old_bufs, o.momentum());
      at::_foreach_add_(old_bufs, old_d_p, 1 - o.dampening());
    }
    d_p = o.nesterov() ? at::_foreach_add(d_p, bufs, o.momentum()) : bufs;
  }
  at::_foreach_add_(t.params, d_p, -o.lr());
}

// Adam's moments on parameters that share a step count: exp_avg = beta1 * exp_avg + (1 - beta1) *
// grad; exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2; p -= lr / (1 - beta1^step) *
// exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps) (libtorch's Adam/AdamW step).
struct Moments {
  TensorList params, grads, exp_avg, exp_avg_sq;
};

void adam_update(Moments& m, std::int64_t step, double lr, double beta1, double beta2, double eps) {
  const double bias_correction1 = 1 - std::pow(beta1, double(step));
  const double bias_correction2 = 1 - std::pow(beta2, double(step));
  at::_foreach_mul_(m.exp_avg, beta1);
  at::_foreach_add_(m.exp_avg, m.grads, 1 - beta1);
  at::_foreach_mul_(m.exp_avg_sq, beta2);
  at::_foreach_addcmul_(m.exp_avg_sq, m.grads, m.grads, 1 - beta2);
  TensorList denom = at::_foreach_sqrt(m.exp_avg_sq);
  at::_foreach_div_(denom, std::sqrt(bias_correction2));
  at::_foreach_add_(denom, eps);
  at::_foreach_addcdiv_(m.params, m.exp_avg, denom, -(lr / bias_correction1));
}

// Adam or AdamW (its weight decay decoupled) on one group; amsgrad refused.
template <typename Options, typename ParamState, typename StateMap>
void adam_group(torch::optim::OptimizerParamGroup& group, StateMap& states) {
  constexpr bool decoupled = std::is_same_v<Options, torch::optim::AdamWOptions>;
  const auto& o = static_cast<const Options&>(group.options());
  if (o.amsgrad()) {
    throw Error(std::string(decoupled ? "AdamW" : "Adam") + ": amsgrad is not supported by the multi-tensor step");
  }
  Trainable t = trainable(group.params());
  if (t.params.empty()) return;
  if (o.weight_decay() != 0) {
    if (decoupled)
      at::_foreach_mul_(t.params, 1 - o.lr() * o.weight_decay());
    else
      t.grads = at::_foreach_add(t.grads, t.params, o.weight_decay());
  }
  std::map<std::int64_t, Moments> by_step;  // the same step count almost always: one update
  for (std::size_t i = 0; i < t.params.size(); ++i) {
    auto& st = state_of<ParamState>(states, t.params[i], [&] {
      auto s = std::make_unique<ParamState>();
      s->step(0);
      s->exp_avg(at::zeros_like(t.params[i], at::MemoryFormat::Preserve));
      s->exp_avg_sq(at::zeros_like(t.params[i], at::MemoryFormat::Preserve));
      return s;
    });
    st.step(st.step() + 1);
    Moments& m = by_step[st.step()];
    m.params.push_back(t.params[i]);
    m.grads.push_back(t.grads[i]);
    m.exp_avg.push_back(st.exp_avg());
    m.exp_avg_sq.push_back(st.exp_avg_sq());
  }
  for (auto& [step, m] : by_step) {
    adam_update(m, step, o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps());
  }
}

}  // namespace

torch::Tensor ForeachSGD::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss = closure_loss(closure);
  for (auto& group : param_groups()) sgd_group(group, state_);
  return loss;
}

torch::Tensor ForeachAdam::step(LossClosure closure) {
  settle();  // after fused steps, the step counts the device kept
  device_steps_.clear();
  at::NoGradGuard no_grad;
  at::Tensor loss = closure_loss(closure);
  for (auto& group : param_groups()) adam_group<torch::optim::AdamOptions, torch::optim::AdamParamState>(group, state_);
  return loss;
}

torch::Tensor ForeachAdamW::step(LossClosure closure) {
  settle();
  device_steps_.clear();
  at::NoGradGuard no_grad;
  at::Tensor loss = closure_loss(closure);
  for (auto& group : param_groups())
    adam_group<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(group, state_);
  return loss;
}

}  // namespace yolotrain::engine
