#pragma once

#include <semaphore.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace yolotrain::lifecycle {

/// Why a stop was requested.
enum class StopReason : int {
  None = 0,      ///< no stop requested
  Signal = 1,    ///< a signal (see ControlToken::stop_signal())
  Deadline = 2,  ///< a deadline passed
  Api = 3,       ///< the host program asked (another thread, a callback)
  Remote = 4,    ///< a request over the network (POST /v1/stop to a yolotrain::endpoint::ControlServer)
  Preemption = 5,  ///< the machine is about to be taken back (a cloud's notice: yolotrain::cloud)
};

/// "none", "signal", "deadline", "api", "remote" or "preemption".
const char* to_string(StopReason reason) noexcept;

/// The shared request state of one run: stop (with a reason), pause, resume, checkpoint-now and a
/// force flag. Every setter is async-signal-safe (lock-free atomics plus sem_post), so signal
/// handlers, other threads and callbacks may all call them; readers cost one atomic load.
/// The training thread polls it at safe points and blocks in wait_while_paused() while paused.
class ControlToken {
 public:
  ControlToken();
  ~ControlToken();
  ControlToken(const ControlToken&) = delete;
  ControlToken& operator=(const ControlToken&) = delete;

  /// Asks the run to stop gracefully (finish or abandon the step, checkpoint, return). The first
  /// request wins: later ones keep the first reason and time. `signo` is the signal number when
  /// `reason` is Signal. `force` asks to abandon the current step instead of finishing it.
  void request_stop(StopReason reason = StopReason::Api, int signo = 0, bool force = false) noexcept;
  /// Makes `reason` / `signo` the stop reason (requesting a stop if none is pending), keeping the
  /// first request's time: for processes of one run that agreed on one stop reason, so that all
  /// of them report it and exit with the same code (yolotrain::dist::apply_agreed). Unlike
  /// request_stop(), the given reason replaces an earlier one.
  void adopt_stop(StopReason reason, int signo = 0, bool force = false) noexcept;
  /// Asks the run to pause at the next safe point.
  void request_pause() noexcept;
  /// Asks the run to pause, release memory, then stop the process (SIGSTOP) so that a shell's `fg`
  /// (SIGCONT) resumes it. This is what Ctrl+Z means by default.
  void request_suspend() noexcept;
  /// Ends a pause (no effect when not paused).
  void request_resume() noexcept;
  /// Asks for one checkpoint at the next safe point; training continues.
  void request_checkpoint() noexcept;

  bool stop_requested() const noexcept { return stop_code_.load(std::memory_order_acquire) != 0; }
  bool force_requested() const noexcept { return force_.load(std::memory_order_acquire); }
  bool pause_requested() const noexcept { return paused_.load(std::memory_order_acquire); }
  /// A suspend (pause, then SIGSTOP) is pending: set by request_suspend(), cleared by
  /// request_resume() or once wait_while_paused() has stopped the process.
  bool suspend_requested() const noexcept { return suspend_.load(std::memory_order_acquire); }
  /// Checkpoint-now requests not yet taken.
  bool checkpoint_requested() const noexcept {
    return checkpoint_.load(std::memory_order_acquire) != 0;
  }
  /// Takes the pending checkpoint-now request: true once per request burst.
  bool take_checkpoint_request() noexcept { return checkpoint_.exchange(0) != 0; }

  StopReason stop_reason() const noexcept;
  /// The signal that asked for the stop, or 0.
  int stop_signal() const noexcept;
  /// CLOCK_MONOTONIC nanoseconds of the first stop request, or 0.
  std::int64_t stop_time_ns() const noexcept { return stop_time_ns_.load(std::memory_order_acquire); }
  /// A short human description: "SIGTERM", "deadline", "api", ...
  std::string stop_description() const;

  /// Blocks without spinning while a pause is requested and no stop is. Returns true when the
  /// pause ended (resumed or stopped), false when `timeout` passed first. If a suspend was
  /// requested, stops the process with SIGSTOP first (the caller has released memory by then).
  bool wait_while_paused(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// Blocks up to `timeout` or until any request arrives; for loops that sleep between steps.
  void wait_for_request(std::chrono::milliseconds timeout);

  /// Clears every request, for a host program that starts a new run with the same token.
  void reset() noexcept;

  /// Monotonic clock in nanoseconds (async-signal-safe).
  static std::int64_t monotonic_ns() noexcept;

 private:
  void wake() noexcept;
  bool sem_wait_until(std::int64_t deadline_ns);

  static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need lock-free atomics");
  static_assert(std::atomic<bool>::is_always_lock_free, "signal handlers need lock-free atomics");
  static_assert(std::atomic<std::int64_t>::is_always_lock_free,
                "signal handlers need lock-free atomics");

  // stop_code_: 0 none, >0 signal number, -StopReason for the others.
  std::atomic<int> stop_code_{0};
  std::atomic<std::int64_t> stop_time_ns_{0};
  std::atomic<bool> force_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> suspend_{false};
  std::atomic<int> checkpoint_{0};
  std::atomic<int> waiters_{0};
  sem_t sem_;
};

}  // namespace yolotrain::lifecycle
