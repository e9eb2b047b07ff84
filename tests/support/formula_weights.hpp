#pragma once
// Weights set by a formula, the same in scripts/ultralytics84_pose_outputs.py (formula, skipped):
// a model of yolotrain and Ultralytics' own of the same YAML then hold the same numbers, tensor by
// tensor name, without a checkpoint file (tests/unit/nn/pose_test.cpp, tests/unit/loss/).
#include <ATen/ATen.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "yolotrain/nn.hpp"

namespace yolotrain::test {

// scripts/ultralytics84_pose_outputs.py's formula: each tensor (sorted by name; DFL, the batch
// counters and the flow's constants left as built) set to a sine over its flat index, scaled to its
// fan-in; BatchNorm's variance kept positive.
inline int set_formula_weights(nn::DetectionModelImpl& model) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& [name, t] : nn::state_dict(model)) {
    const std::string last = name.substr(name.rfind('.') + 1);
    const bool flow_constant = name.find(".flow_model.") != std::string::npos &&
                               (last == "loc" || last == "cov" || last == "mask");
    if (name.find("dfl") != std::string::npos || last == "num_batches_tracked" || flow_constant) continue;
    tensors.emplace_back(name, t);
  }
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& [name, t] = tensors[k];
    const at::Tensor s = at::sin(0.37 * at::arange(t.numel(), at::kDouble) + 1.3 * static_cast<double>(k));
    at::Tensor v;
    if (name.size() > 11 && name.compare(name.size() - 11, 11, "running_var") == 0) v = 1 + 0.5 * s.abs();
    else if (t.dim() >= 2) v = s * std::sqrt(3.0 / static_cast<double>(t.numel() / t.size(0)));
    else if (name.size() > 9 && name.compare(name.size() - 9, 9, "bn.weight") == 0) v = 1 + 0.1 * s;
    else v = 0.1 * s;
    t.copy_(v.to(at::kFloat).view(t.sizes()));
  }
  return static_cast<int>(tensors.size());
}

}  // namespace yolotrain::test
