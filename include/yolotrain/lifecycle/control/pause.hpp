#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::lifecycle {

/// What a pause gives back (DESIGN contract 6): `cache` empties the CUDA allocator's cache;
/// `offload` first moves the training state to host memory; `exit` checkpoints and ends the run
/// (exit 75) so a scheduler can requeue it.
enum class PauseRelease { Cache, Offload, Exit };

/// "cache", "offload" or "exit"; throws yolotrain::Error naming `text` otherwise.
PauseRelease parse_pause_release(const std::string& text);

/// How pause_run() ended.
enum class PauseEnd {
  Resumed,  ///< a resume came: continue with the next step
  Stopped,  ///< a stop came while paused: end the run without another step
  Exit,     ///< pause_release=exit: the checkpoint is written, end the run to be resumed
};

/// The loop's parts that pause_run() calls.
struct PauseSteps {
  /// Writes a checkpoint of the last completed step and waits until it is on disk. Required.
  std::function<void()> checkpoint;
  /// `offload`: moves the model and optimizer state to the CPU (`to_host` true) and back.
  std::function<void(bool to_host)> offload;
  /// Blocks while paused; returns true when a stop ended the pause. Default:
  /// token.wait_while_paused() then token.stop_requested(). (The trainer's ranks agree here.)
  std::function<bool()> wait;
  /// Progress lines ("paused at step 12 (...)"). Default: std::cout.
  std::function<void(const std::string&)> say;
  /// State changes. Default: status.set_state().
  std::function<void(RunState)> set_state;
};

/// The pause sequence, one piece for every loop (the trainer's and a user's own): note the
/// request, Pausing, checkpoint, release (offload, then the CUDA cache and freed host memory),
/// Paused, wait without spinning, restore (offload back), Running. With `Exit` it returns after
/// the checkpoint. Pausing never changes the training result: call it at a step boundary.
PauseEnd pause_run(ControlToken& token, RunStatus& status, PauseRelease release, std::int64_t step,
                   const PauseSteps& steps);

}  // namespace yolotrain::lifecycle
