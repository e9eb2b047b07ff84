#pragma once

#include <torch/types.h>

#include <string>
#include <vector>

namespace yolotrain::engine {

/// What `amp` asks for on a device: nothing, fp16 autocast with a gradient scaler (CUDA), or
/// bf16 autocast (no scaler: bf16 has float32's range).
enum class AmpMode { Off, Fp16Scaled, Bf16 };

/// amp=true: fp16 + scaler on CUDA and off on the CPU (as Ultralytics, which disables AMP there);
/// amp=bf16: bf16 autocast on either; amp=false: off.
AmpMode amp_mode(const std::string& amp, const torch::Device& device);

/// Autocast on for the device while it lives (nested scopes restore what they found).
class AutocastScope {
 public:
  AutocastScope(AmpMode mode, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false, cuda_ = false, was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

/// torch.cuda.amp.GradScaler with its defaults (init 2^16, growth 2 every 2000 finite steps,
/// backoff 0.5): scale the loss, unscale the gradients before clipping, skip the optimizer step
/// when a gradient is inf/NaN, update the scale. A disabled scaler passes everything through.
class GradScaler {
 public:
  explicit GradScaler(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  /// loss * scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  /// Divides every defined gradient by the scale in place; false when one is not finite.
  bool unscale(const std::vector<at::Tensor>& params);
  /// Grows or backs off the scale after a step (found_inf: the step was skipped).
  void update(bool found_inf);

  double scale_value = 65536.0;     ///< current scale (checkpointed)
  std::int64_t growth_tracker = 0;  ///< finite steps since the last change (checkpointed)

 private:
  bool enabled_;
};

}  // namespace yolotrain::engine
