#pragma once
// libtorch's SGD, Adam and AdamW with their per-parameter loops replaced by multi-tensor
// operators (_foreach_*): a group's update is a handful of operators instead of five to nine per
// parameter (on a GPU, kernel launches). Same options, same per-parameter state (checkpoints and
// optimizer_state() are unchanged), and on the CPU the same results to the bit: the operators'
// CPU kernels loop over the tensors with the per-tensor operations libtorch's step() uses
// (tests/unit/engine/multi_tensor_test.cpp compares them step by step). With libtorch 2.4 or
// later they also step through the fused kernels (DeviceSkippable: src/engine/fused_optimizers.cpp).
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <vector>

#include "yolotrain/torch_compat.hpp"

namespace yolotrain::engine {

/// An optimizer whose step can be left undone on the device: what lets a step with an inf/NaN
/// gradient (the fp16 scaler's found_inf, a non-finite norm) be skipped without a host read.
/// Where libtorch has the fused optimizer kernels with found_inf (_fused_sgd_, _fused_adam_,
/// _fused_adamw_: CPU and CUDA since 2.4), the foreach optimizers below step through them; on an
/// older libtorch (Debian 12's 1.13) they cannot, and skips_on_device() says so.
class DeviceSkippable {
 public:
  virtual ~DeviceSkippable() = default;
  static constexpr bool skips_on_device() { return YOLOTRAIN_TORCH_AT_LEAST(2, 4); }
  /// The step, through the fused kernels, left undone where `found_inf` (a 0-dim float32 tensor on
  /// the parameters' device; undefined: never) is non-zero: parameters and state unchanged.
  /// Nothing is read on the host. Throws yolotrain::Error where !skips_on_device().
  virtual void step_unless(const at::Tensor& found_inf) = 0;
  /// Writes what only the device holds (Adam's step counts) into the per-parameter state, before
  /// it is saved: a host read.
  virtual void settle() {}
  /// The per-parameter state was replaced (a checkpoint loaded): forget the device's copies.
  virtual void reload() {}
};

class ForeachSGD : public torch::optim::SGD, public DeviceSkippable {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// _fused_sgd_ per group. Its first step with fresh momentum buffers takes the gradient itself,
  /// as libtorch's; buffers made by a skipped step stay 0, which gives the same (dampening 0).
  void step_unless(const at::Tensor& found_inf) override;
};

/// Adam and AdamW: the fused kernels read each parameter's step count from a device tensor (one
/// per group here), which counts only the steps not skipped; settle() writes it into the state.
class ForeachAdam : public torch::optim::Adam, public DeviceSkippable {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
  void step_unless(const at::Tensor& found_inf) override;
  void settle() override;
  void reload() override { device_steps_.clear(); }

 private:
  std::vector<at::Tensor> device_steps_;  // per group: 0-dim float32, the steps taken
};

class ForeachAdamW : public torch::optim::AdamW, public DeviceSkippable {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
  void step_unless(const at::Tensor& found_inf) override;
  void settle() override;
  void reload() override { device_steps_.clear(); }

 private:
  std::vector<at::Tensor> device_steps_;
};

}  // namespace yolotrain::engine
