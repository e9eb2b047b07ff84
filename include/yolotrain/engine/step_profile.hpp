#pragma once
// The step profile: what a training step asks of the device, counted on any device (the CPU too).
// An OperatorCounter counts, through an at::RecordFunction callback on the calling thread (and the
// autograd threads its backward runs on), the ATen operators dispatched at the top level — each a
// kernel launch or more on a GPU — and the operators that make the host wait for the device or
// whose output's shape depends on the data (`.item()`, nonzero, boolean-mask indexing, ...): each
// of those drains a GPU's queue and rules out capturing the step as a CUDA graph.
// profile_training_steps() runs a real training run and counts its steady-state steps one by one.
// docs/performance.md "The step profile" lists what is counted and today's figures.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "yolotrain/engine/train_config.hpp"

namespace yolotrain::engine {

/// What an OperatorCounter saw.
struct OperatorCounts {
  /// ATen operators dispatched at the top level (not inside another; an autograd node's evaluation
  /// in the backward pass counts as one); yolotrain's own RECORD_FUNCTION scopes are not operators.
  std::int64_t operators = 0;
  /// Sync-forcing or data-dependent-shape operators, outermost only (`.item()` is aten::item,
  /// not also the aten::_local_scalar_dense inside it), by name; a boolean-mask index or index_put_
  /// is named "aten::index (bool mask)" / "aten::index_put_ (bool mask)".
  std::map<std::string, std::int64_t> syncs;
  std::map<std::string, std::int64_t> by_name;  ///< top-level operators by name
  /// The trainer's reads of its step tally on the host (its "yolotrain::cadence_read" scopes: the
  /// progress line's cadence, an epoch's end, a checkpoint); the syncs inside them are not counted.
  std::int64_t cadence_reads = 0;

  std::int64_t sync_count() const;
  OperatorCounts& operator+=(const OperatorCounts& other);
  /// "4558 operators, 0 cadence reads, 156 syncs (aten::item 40, aten::nonzero 12, ...)".
  std::string summary() const;
};

/// Counts the operators the constructing thread dispatches while it lives (one per thread at a
/// time; a second throws yolotrain::Error). take() returns the counts so far and starts again.
class OperatorCounter {
 public:
  OperatorCounter();
  ~OperatorCounter();
  OperatorCounter(const OperatorCounter&) = delete;
  OperatorCounter& operator=(const OperatorCounter&) = delete;

  OperatorCounts take();

 private:
  std::uint64_t handle_ = 0;
};

/// What profile_training_steps() measured: one OperatorCounts per profiled step.
struct StepProfile {
  std::vector<OperatorCounts> steps;
  OperatorCounts total() const;
  double operators_per_step() const;
  double syncs_per_step() const;
  std::int64_t max_syncs_in_a_step() const;
};

/// Trains `cfg` (any run: its data, model, batch, device; val and saving as given) and counts each
/// of `steps` steps after `warmup` steps: from one step's end (in on_batch_end, after the run's own
/// listeners) to the next's, so a step is everything the training thread does for it — the
/// token's poll, the wait for the batch, forward, loss, backward, optimizer, EMA, the progress
/// line. The run is stopped after the last profiled step (its stop checkpoint uncounted).
/// Throws yolotrain::Error when the run ends before the steps are counted.
StepProfile profile_training_steps(TrainConfig cfg, int warmup, int steps);

}  // namespace yolotrain::engine
