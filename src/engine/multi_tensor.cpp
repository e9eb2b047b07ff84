#include "multi_tensor.hpp"

#include "yolotrain/torch_compat.hpp"

namespace yolotrain::engine {

std::vector<at::Tensor> defined_grads(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

at::Tensor clip_grad_norm(std::vector<at::Tensor>& grads, double max_norm) {
  if (grads.empty()) return {};
  const std::vector<at::Tensor> norms = at::_foreach_norm(grads, 2);
  const at::Tensor total = norms.size() == 1 ? norms[0] : at::stack(norms).norm(2);
  const at::Tensor coef = at::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  torch_compat::foreach_mul_(grads, coef);
  return total;
}

void drop_grads(const std::vector<at::Tensor>& params) {
  for (const auto& p : params) {
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

void exponential_average(std::vector<at::Tensor>& averaged, const std::vector<at::Tensor>& current, double decay) {
  if (averaged.empty()) return;
  at::_foreach_mul_(averaged, decay);
  at::_foreach_add_(averaged, current, 1.0 - decay);
}

}  // namespace yolotrain::engine
