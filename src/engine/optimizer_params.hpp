#pragma once
// What the multi-tensor and fused optimizer steps share: a group's parameters that have a gradient,
// and a parameter's libtorch state (made the first time), found by libtorch's key.
#include <ATen/ATen.h>

#include <vector>

#include "yolotrain/lifecycle/checkpoint/optimizer_state_key.hpp"

namespace yolotrain::engine::detail {

/// A group's parameters that have a gradient, and those gradients.
struct Trainable {
  std::vector<at::Tensor> params, grads;
};

inline Trainable trainable(const std::vector<at::Tensor>& params) {
  Trainable t;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    t.params.push_back(p);
    t.grads.push_back(p.grad());
  }
  return t;
}

/// The parameter's state of type State, made by `make` the first time.
template <typename State, typename StateMap, typename Make>
State& state_of(StateMap& states, const at::Tensor& p, Make make) {
  auto& slot = states[lifecycle::optimizer_state_key(states, p)];
  if (!slot) slot = make();
  return static_cast<State&>(*slot);
}

}  // namespace yolotrain::engine::detail
