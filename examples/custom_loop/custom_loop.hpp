#pragma once

// custom_loop: a small libtorch training program built on yolotrain's lifecycle core alone.
// train() is the whole loop; main.cpp is its command line; bench/ runs it in-process.

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"

namespace custom_loop {

/// Bad options or a checkpoint made with other options: the command line must change (exit 2).
class UsageError : public yolotrain::Error {
 public:
  using yolotrain::Error::Error;
};

/// What a run is asked to do (the command-line flags of the same names).
struct Options {
  std::filesystem::path dir;      ///< checkpoints and status.json
  std::int64_t steps = 0;         ///< total optimizer steps
  std::uint64_t seed = 0;         ///< initialisation, data order and augmentation
  std::int64_t batch = 32;
  std::int64_t save_every_steps = 0;  ///< 0: off
  double save_interval_s = 300;       ///< 0: off
  int step_delay_ms = 0;              ///< sleep per step
  /// After this step, status.json is written and the loop waits for any request (a signal) before
  /// going on: a test aims its signal at a state the run holds, never racing it. -1: none.
  std::int64_t hold_at_step = -1;
  /// The first pause holds at this phase (lifecycle::PausePhase's name) until DIR/release-<phase>
  /// exists: the fault-injection point of the job-control tests. "": none.
  std::string hold_at_phase;
  std::string pause_release = "cache";  ///< cache | offload | exit
  std::string device = "cpu";           ///< cpu | cuda
  std::int64_t fc_width = 0;  ///< width of an extra hidden layer (0: none); makes checkpoints big
  int threads = 0;            ///< intra-op threads (0: one per core)
  bool quiet = false;         ///< no per-run messages on the log
  /// HOST:PORT of an HTTP control endpoint beside the signals (yolotrain::endpoint::ControlServer):
  /// POST /v1/pause, /v1/resume, /v1/stop, /v1/checkpoint; GET /v1/status, /metrics. "": none.
  std::string control;
  std::string control_token_file;  ///< its bearer token, in a file (required off loopback)
};

/// How a run ended.
enum class Outcome { Completed, Stopped, Exited };

struct Result {
  Outcome outcome = Outcome::Completed;
  std::int64_t step = 0;          ///< completed steps
  std::int64_t resumed_from = -1; ///< the checkpoint's step, or -1 for a fresh start
  std::string digest;             ///< SHA-256 of parameters and buffers (Completed only)
  std::filesystem::path checkpoint;  ///< the last checkpoint written
};

/// Trains until `opts.steps` are done or `token` asks to stop; resumes from the newest valid
/// checkpoint in `opts.dir`. Throws UsageError for bad options, yolotrain::Error for unusable
/// checkpoints and other runtime failures.
Result train(const Options& opts, yolotrain::lifecycle::ControlToken& token, std::ostream& log);

}  // namespace custom_loop
