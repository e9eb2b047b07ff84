#pragma once
// What the training steps leave on the device for the host to read on a cadence, so that a step
// itself reads nothing back (each host read drains a GPU's queue): the running means of the loss
// terms, and the first step whose loss, or whose gradient norm, was not finite (self-healing
// rolls back when a read finds one). Trainer::Run reads it at the progress line's cadence, at an
// epoch's last step and before anything is saved (docs/engine.md "Self-healing").
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace yolotrain::engine {

class StepTally {
 public:
  /// Starts again from the host's running means (zeros at an epoch's start, a checkpoint's after
  /// a resume or a roll-back) on `device`, with no non-finite step.
  void reset(const std::vector<double>& means, const at::Device& device);
  /// Step `step`, the `batch`-th of its epoch (from 0), had the loss terms `items` ([n], any float
  /// dtype, on the device): the running means become (mean * batch + item) / (batch + 1), in
  /// double, as the host computed them.
  void add_loss(const at::Tensor& items, std::int64_t batch, std::int64_t step);
  /// Step `step`'s total gradient norm (a 0-dim tensor on the device).
  void add_grad_norm(const at::Tensor& norm, std::int64_t step);

  /// One read on the host (a "yolotrain::cadence_read" scope for the step profile).
  struct Reading {
    std::vector<double> means;
    std::int64_t nonfinite_loss_step = -1;  ///< the first step with a NaN/Inf loss; -1: none
    std::int64_t nonfinite_grad_step = -1;  ///< the first step with a NaN/Inf gradient norm; -1: none
  };
  Reading read() const;

 private:
  static void note_nonfinite(at::Tensor& first, const at::Tensor& value, std::int64_t step);

  at::Tensor means_;           // [n] double
  at::Tensor first_bad_loss_;  // [1] double: the first step with a non-finite loss (inf: none)
  at::Tensor first_bad_grad_;  // [1] double: the first step with a non-finite gradient norm
};

}  // namespace yolotrain::engine
