#pragma once
// What the optimizer tests share: three groups of parameters of mixed shapes, their gradients,
// libtorch parameter groups of them, and comparing two sets.
#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace yolotrain::test {

// Three groups of parameters of mixed shapes (a conv filter, a bias, a norm weight, a matrix).
inline std::vector<std::vector<at::Tensor>> make_params(std::uint64_t seed) {
  at::manual_seed(seed);
  std::vector<std::vector<at::Tensor>> groups = {
      {at::randn({8, 4, 3, 3}), at::randn({6, 5})}, {at::randn({8})}, {at::randn({16}), at::randn({3, 3})}};
  for (auto& g : groups) {
    for (auto& p : g) p.requires_grad_(true);
  }
  return groups;
}

inline std::vector<std::vector<at::Tensor>> copy_params(const std::vector<std::vector<at::Tensor>>& from) {
  std::vector<std::vector<at::Tensor>> out;
  for (const auto& g : from) {
    out.emplace_back();
    for (const auto& p : g) out.back().push_back(p.detach().clone().requires_grad_(true));
  }
  return out;
}

inline void set_grads(std::vector<std::vector<at::Tensor>>& groups, std::uint64_t seed) {
  at::manual_seed(seed);
  for (auto& g : groups) {
    for (auto& p : g) p.mutable_grad() = at::randn(p.sizes());
  }
}

inline bool all_equal(const std::vector<std::vector<at::Tensor>>& a, const std::vector<std::vector<at::Tensor>>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < a[i].size(); ++j) {
      if (!at::equal(a[i][j], b[i][j])) return false;
    }
  }
  return true;
}

template <typename Options>
inline std::vector<torch::optim::OptimizerParamGroup> groups_of(const std::vector<std::vector<at::Tensor>>& params,
                                                                const std::vector<Options>& options) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (std::size_t i = 0; i < params.size(); ++i) {
    groups.emplace_back(params[i], std::make_unique<Options>(options[i]));
  }
  return groups;
}

}  // namespace yolotrain::test
