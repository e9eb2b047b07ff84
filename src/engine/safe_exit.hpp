#pragma once
// A run's time to a safe exit, measured as it trains: from a stop request to the checkpoint that
// resumes it being safe — the rest of the step in flight (the 90th percentile of the last 32
// intervals between the loop's polls: a validation batch or a pause now and then does not count),
// the snapshot, the write (encode, write, fsync, rename) and, with remote=, the checkpoint's upload.
// Published in status.json and /metrics; preemption= plans its stop with it.
#include <chrono>
#include <deque>

namespace yolotrain::engine::detail {

class SafeExitClock {
 public:
  /// The loop polled: the time since its last poll is one step.
  void polled();
  void snapshot_took(double seconds) { snapshot_s_ = seconds; }
  void write_took(double seconds) { write_s_ = seconds; }
  void upload_took(double seconds) { upload_s_ = seconds; }
  /// A step (the 90th percentile of the recent ones; 0 before two polls).
  double step_seconds() const;
  /// step + snapshot + write + upload.
  double seconds() const { return step_seconds() + snapshot_s_ + write_s_ + upload_s_; }

 private:
  std::deque<double> steps_;
  std::chrono::steady_clock::time_point last_poll_{};
  double snapshot_s_ = 0, write_s_ = 0, upload_s_ = 0;
};

}  // namespace yolotrain::engine::detail
