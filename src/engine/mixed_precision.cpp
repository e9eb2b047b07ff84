#include "mixed_precision.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include "yolotrain/torch_compat.hpp"

namespace yolotrain::engine {
using torch_compat::autocast_dtype;
using torch_compat::autocast_enabled;
using torch_compat::set_autocast_dtype;
using torch_compat::set_autocast_enabled;

AmpMode amp_mode(const std::string& amp, const torch::Device& device) {
  if (amp == "bf16") return AmpMode::Bf16;
  if (amp == "true" && device.is_cuda()) return AmpMode::Fp16Scaled;
  return AmpMode::Off;
}

AutocastScope::AutocastScope(AmpMode mode, const torch::Device& device) {
  if (mode == AmpMode::Off) return;
  active_ = true;
  cuda_ = device.is_cuda();
  const at::ScalarType dtype = mode == AmpMode::Bf16 ? at::kBFloat16 : at::kHalf;
  was_enabled_ = autocast_enabled(cuda_);
  was_dtype_ = autocast_dtype(cuda_);
  set_autocast_dtype(cuda_, dtype);
  set_autocast_enabled(cuda_, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(cuda_, was_enabled_);
  set_autocast_dtype(cuda_, was_dtype_);
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  return enabled_ ? loss * scale_value : loss;
}

bool GradScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!enabled_) return true;
  std::vector<at::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return true;
  const auto options = grads[0].options().dtype(at::kFloat);
  at::Tensor found_inf = at::zeros({1}, options);
  if (grads[0].is_cuda()) {
    // The fused kernel (CUDA only): one launch for all gradients, as torch's GradScaler.
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, at::full({1}, 1.0 / scale_value, options));
  } else {
    for (auto& g : grads) {
      g.mul_(1.0 / scale_value);
      found_inf.add_(g.isfinite().all().logical_not().to(at::kFloat));
    }
  }
  return found_inf.item<float>() == 0.0f;
}

void GradScaler::update(bool found_inf) {
  if (!enabled_) return;
  if (found_inf) {
    scale_value *= 0.5;
    growth_tracker = 0;
  } else if (++growth_tracker == 2000) {
    scale_value *= 2.0;
    growth_tracker = 0;
  }
}

}  // namespace yolotrain::engine
