#pragma once
// Test-only faults for the trainer's self-healing (tests/integration/self_healing_test.cpp): not a
// user argument. Each fires in this process at the training step given, `times` times (a replay
// after a roll-back or a restart reaches the step again).
#include <cstdint>

namespace yolotrain::engine::testing {

/// The loss of training step `step` (global, 0-based) is NaN.
void inject_nonfinite_loss(std::int64_t step, int times = 1);
/// Training step `step` fails with an out-of-memory error (as CUDA's caching allocator words it).
void inject_out_of_memory(std::int64_t step, int times = 1);
/// Clears both.
void clear_faults();

/// For the trainer: whether the fault is due at `step` (and consumes it).
bool nonfinite_loss_due(std::int64_t step);
bool out_of_memory_due(std::int64_t step);

}  // namespace yolotrain::engine::testing
