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
/// when a gradient is inf/NaN, update the scale. As torch's, it keeps its scale, its growth
/// tracker and what it found on the device, so that a step reads nothing back; read() is the one
/// host read (a checkpoint, the run's end). A disabled scaler passes everything through.
class GradScaler {
 public:
  explicit GradScaler(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  /// A checkpoint's scale and growth tracker (the defaults: 65536, 0), on the device of the next loss.
  void restore(double scale, std::int64_t growth_tracker);
  /// loss * scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss);
  /// Divides every gradient by the scale in place; returns found_inf, a 0-dim float32 tensor on
  /// their device, 1 when one is not finite (undefined when disabled or without gradients).
  at::Tensor unscale(const std::vector<at::Tensor>& grads);
  /// After the step (skipped where found_inf is 1): backs off or grows the scale, counts a skipped
  /// step — on the device (torch's _amp_update_scale_ rules).
  void update(const at::Tensor& found_inf);

  struct Reading {
    double scale = 65536.0;           ///< current scale (checkpointed)
    std::int64_t growth_tracker = 0;  ///< finite steps since the last change (checkpointed)
    std::int64_t skipped_steps = 0;   ///< steps skipped in this process
  };
  /// What the device holds (a host read).
  Reading read() const;

 private:
  void place_on(const at::Device& device);

  bool enabled_;
  Reading initial_;
  at::Tensor scale_;           // 0-dim float32, as torch's
  at::Tensor growth_tracker_;  // 0-dim int32
  at::Tensor skipped_;         // 0-dim float32
};

}  // namespace yolotrain::engine
