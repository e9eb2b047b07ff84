// DeviceSkippable's steps (foreach_optimizers.hpp): libtorch's fused optimizer kernels with
// found_inf (_fused_sgd_, _fused_adam_, _fused_adamw_; CPU and CUDA since 2.4), which leave a step
// undone on the device where found_inf is set — as torch.optim's fused=True with a GradScaler. One
// kernel per group for the whole update (on a GPU: a few launches instead of a few per operator).
// On an older libtorch step_unless() refuses (DeviceSkippable::skips_on_device() is false).
#include <ATen/core/grad_mode.h>

#include <optional>
#include <string>
#include <type_traits>

#include "foreach_optimizers.hpp"
#include "optimizer_params.hpp"
#include "yolotrain/error.hpp"

#if YOLOTRAIN_TORCH_AT_LEAST(2, 4)
#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/_fused_sgd.h>
#endif

namespace yolotrain::engine {
namespace {

using detail::state_of;
using detail::trainable;
using detail::Trainable;
using TensorList = std::vector<at::Tensor>;

[[noreturn]] void no_fused_kernels(const std::string& name) {
  throw Error(name + ": this libtorch (" + TORCH_VERSION +
              ") has no fused optimizer kernels with found_inf (libtorch 2.4 and later have them); use step()");
}

// A group's device step count: its parameters' common step (all step together), put on `device`.
template <typename ParamState, typename StateMap>
void place_step(at::Tensor& device_step, const TensorList& params, StateMap& states) {
  if (device_step.defined() && device_step.device() == params[0].device()) return;
  std::int64_t host = -1;
  for (const at::Tensor& p : params) {
    const auto it = states.find(lifecycle::optimizer_state_key(states, p));
    const std::int64_t step = it == states.end() ? 0 : static_cast<ParamState&>(*it->second).step();
    if (host >= 0 && step != host) {
      throw Error("fused Adam step: a group's parameters are at different steps (" + std::to_string(host) + " and " +
                  std::to_string(step) + "); step() handles that");
    }
    host = step;
  }
  device_step = at::full({}, double(host), params[0].options().dtype(at::kFloat));
}

// The device's step counts into the state (a host read), before it is saved.
template <typename ParamState, typename Optimizer>
void settle_steps(Optimizer& opt, const TensorList& device_steps) {
  auto& states = opt.state();
  for (std::size_t g = 0; g < device_steps.size() && g < opt.param_groups().size(); ++g) {
    if (!device_steps[g].defined()) continue;
    const auto step = static_cast<std::int64_t>(device_steps[g].template item<double>());
    for (const at::Tensor& p : opt.param_groups()[g].params()) {
      const auto it = states.find(lifecycle::optimizer_state_key(states, p));
      if (it != states.end()) static_cast<ParamState&>(*it->second).step(step);
    }
  }
}

#if YOLOTRAIN_TORCH_AT_LEAST(2, 4)
std::optional<at::Tensor> optional_of(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

// The fused kernels walk each tensor's memory in order: a gradient laid out unlike its parameter
// (AccumulateGrad keeps them alike; a hand-set gradient may not be) is copied into its layout.
Trainable laid_out_alike(Trainable t) {
  for (std::size_t i = 0; i < t.params.size(); ++i) {
    if (t.grads[i].strides() != t.params[i].strides()) t.grads[i] = at::empty_like(t.params[i]).copy_(t.grads[i]);
  }
  return t;
}

template <typename StateMap>
void fused_sgd_group(torch::optim::OptimizerParamGroup& group, StateMap& states, const at::Tensor& found_inf) {
  const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
  const Trainable t = laid_out_alike(trainable(group.params()));
  if (t.params.empty()) return;
  TensorList bufs;
  bool first = o.momentum() != 0;  // every buffer made now: the kernel takes the gradient itself
  if (o.momentum() != 0) {
    for (const at::Tensor& p : t.params) {
      bool fresh = false;
      auto& st = state_of<torch::optim::SGDParamState>(states, p, [&] {
        fresh = true;
        auto s = std::make_unique<torch::optim::SGDParamState>();
        s->momentum_buffer(at::zeros_like(p, at::MemoryFormat::Preserve));
        return s;
      });
      first = first && fresh;
      bufs.push_back(st.momentum_buffer());
    }
  }
  at::_fused_sgd_(t.params, t.grads, bufs, o.weight_decay(), o.momentum(), o.lr(), o.dampening(), o.nesterov(),
                  /*maximize=*/false, first, std::nullopt, optional_of(found_inf));
}

// Adam or AdamW on one group; the step count on the device, counting only the steps not skipped.
template <typename Options, typename ParamState, typename StateMap>
void fused_adam_group(torch::optim::OptimizerParamGroup& group, StateMap& states, at::Tensor& device_step,
                      const at::Tensor& found_inf) {
  constexpr bool decoupled = std::is_same_v<Options, torch::optim::AdamWOptions>;
  const auto& o = static_cast<const Options&>(group.options());
  if (o.amsgrad())
    throw Error(std::string(decoupled ? "AdamW" : "Adam") + ": amsgrad is not supported by the fused step");
  const Trainable t = laid_out_alike(trainable(group.params()));
  if (t.params.empty()) return;
  place_step<ParamState>(device_step, t.params, states);
  TensorList exp_avg, exp_avg_sq;
  for (const at::Tensor& p : t.params) {
    auto& st = state_of<ParamState>(states, p, [&] {
      auto s = std::make_unique<ParamState>();
      s->step(0);
      s->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
      s->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      return s;
    });
    exp_avg.push_back(st.exp_avg());
    exp_avg_sq.push_back(st.exp_avg_sq());
  }
  device_step.add_(1);
  const TensorList steps(t.params.size(), device_step);  // the kernel reads each parameter's step
  const auto [beta1, beta2] = o.betas();
  if constexpr (decoupled) {
    at::_fused_adamw_(t.params, t.grads, exp_avg, exp_avg_sq, {}, steps, o.lr(), beta1, beta2, o.weight_decay(),
                      o.eps(), /*amsgrad=*/false, /*maximize=*/false, std::nullopt, optional_of(found_inf));
  } else {
    at::_fused_adam_(t.params, t.grads, exp_avg, exp_avg_sq, {}, steps, o.lr(), beta1, beta2, o.weight_decay(), o.eps(),
                     /*amsgrad=*/false, /*maximize=*/false, std::nullopt, optional_of(found_inf));
  }
  if (found_inf.defined()) device_step.sub_(found_inf);
}
#endif

// Adam's or AdamW's fused step over its groups, each with its device step count.
template <typename Options, typename ParamState, typename Optimizer>
void fused_adam_step(Optimizer& opt, TensorList& device_steps, const at::Tensor& found_inf, const std::string& name) {
#if YOLOTRAIN_TORCH_AT_LEAST(2, 4)
  (void)name;
  at::NoGradGuard no_grad;
  device_steps.resize(opt.param_groups().size());
  for (std::size_t g = 0; g < opt.param_groups().size(); ++g) {
    fused_adam_group<Options, ParamState>(opt.param_groups()[g], opt.state(), device_steps[g], found_inf);
  }
#else
  (void)opt, (void)device_steps, (void)found_inf;
  no_fused_kernels(name);
#endif
}

}  // namespace

void ForeachSGD::step_unless(const at::Tensor& found_inf) {
#if YOLOTRAIN_TORCH_AT_LEAST(2, 4)
  at::NoGradGuard no_grad;
  for (auto& group : param_groups()) fused_sgd_group(group, state_, found_inf);
#else
  (void)found_inf;
  no_fused_kernels("SGD");
#endif
}

void ForeachAdam::step_unless(const at::Tensor& found_inf) {
  fused_adam_step<torch::optim::AdamOptions, torch::optim::AdamParamState>(*this, device_steps_, found_inf, "Adam");
}

void ForeachAdamW::step_unless(const at::Tensor& found_inf) {
  fused_adam_step<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(*this, device_steps_, found_inf, "AdamW");
}

void ForeachAdam::settle() { settle_steps<torch::optim::AdamParamState>(*this, device_steps_); }
void ForeachAdamW::settle() { settle_steps<torch::optim::AdamWParamState>(*this, device_steps_); }

}  // namespace yolotrain::engine
