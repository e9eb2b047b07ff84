#pragma once
// Test-only faults for the trainer's self-healing (tests/integration/self_healing_test.cpp): not a
// user argument. Each fires in this process at the training step given, `times` times (a replay
// after a roll-back reaches the step again). Ultralytics 8.4 also retries a first-epoch CUDA
// out-of-memory error with half the batch; yolotrain does not (docs/engine.md, "Self-healing").
#include <cstdint>

namespace yolotrain::engine::testing {

/// The loss of training step `step` (global, 0-based) is NaN.
void inject_nonfinite_loss(std::int64_t step, int times = 1);
/// Clears it.
void clear_faults();

/// For the trainer: whether the fault is due at `step` (and consumes it).
bool nonfinite_loss_due(std::int64_t step);

}  // namespace yolotrain::engine::testing
