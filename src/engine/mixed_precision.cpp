#include "mixed_precision.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/record_function.h>
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

void GradScaler::restore(double scale, std::int64_t growth_tracker) {
  initial_ = {scale, growth_tracker, read().skipped_steps};  // a roll-back keeps the process's count
  scale_ = growth_tracker_ = skipped_ = at::Tensor();
}

void GradScaler::place_on(const at::Device& device) {
  if (scale_.defined() && scale_.device() == device) return;
  const Reading now = read();  // the last device's figures, or the checkpoint's
  const auto options = at::TensorOptions().device(device).dtype(at::kFloat);
  scale_ = at::full({}, now.scale, options);
  growth_tracker_ = at::full({}, double(now.growth_tracker), options.dtype(at::kInt));
  skipped_ = at::full({}, double(now.skipped_steps), options);
}

at::Tensor GradScaler::scale(const at::Tensor& loss) {
  if (!enabled_) return loss;
  place_on(loss.device());
  return loss * scale_;
}

at::Tensor GradScaler::unscale(const std::vector<at::Tensor>& grads) {
  if (!enabled_ || grads.empty()) return {};
  place_on(grads[0].device());
  at::Tensor found_inf = at::zeros({}, scale_.options());
  const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);  // as torch computes it
  if (grads[0].is_cuda()) {
    // The fused kernel (CUDA only): one launch for all gradients, as torch's GradScaler.
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  } else {
    for (const at::Tensor& g : grads) {
      g.mul_(inv_scale);
      found_inf.add_(g.isfinite().all().logical_not());
    }
    found_inf.clamp_max_(1);
  }
  return found_inf;
}

// torch's _amp_update_scale_: found -> scale * 0.5, tracker 0; else tracker + 1, and at 2000 the
// scale doubled (if it stays finite) and the tracker back to 0. Written with where() so that any
// device runs it (libtorch 1.13 has no CPU kernel for it); six small operators.
void GradScaler::update(const at::Tensor& found_inf) {
  if (!enabled_ || !found_inf.defined()) return;
  const at::Tensor found = found_inf > 0;
  const at::Tensor tracker = at::where(found, at::zeros_like(growth_tracker_), growth_tracker_ + 1);
  const at::Tensor grown = scale_ * 2.0;
  const at::Tensor grow = (tracker == 2000).logical_and(grown.isfinite());
  scale_.copy_(at::where(found, scale_ * 0.5, at::where(grow, grown, scale_)));
  growth_tracker_.copy_(at::where(tracker == 2000, at::zeros_like(tracker), tracker));
  skipped_.add_(found_inf);
}

GradScaler::Reading GradScaler::read() const {
  if (!scale_.defined()) return initial_;
  RECORD_FUNCTION("yolotrain::cadence_read", std::vector<c10::IValue>());
  return {scale_.item<double>(), growth_tracker_.item<std::int64_t>(),
          static_cast<std::int64_t>(skipped_.item<double>())};
}

}  // namespace yolotrain::engine
