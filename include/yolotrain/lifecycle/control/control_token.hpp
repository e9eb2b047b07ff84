#pragma once

#include <semaphore.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
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

/// The points of the pause sequence (pause_run() and wait_while_paused()), in order; a test's
/// fault injection holds the run at one of them (ControlToken::set_phase_hook()).
enum class PausePhase {
  BeforeCheckpoint,  ///< the pause is noticed, its checkpoint not yet written
  AfterCheckpoint,   ///< the checkpoint is on disk, memory not yet released
  AfterRelease,      ///< memory released, the wait not yet begun
  BeforeSelfStop,    ///< a pending suspend signal is about to be let through (the process stops)
  AfterContinue,     ///< past that point: continued, or never stopped
};

/// "before-checkpoint", "after-checkpoint", "after-release", "before-self-stop", "after-continue".
const char* to_string(PausePhase phase) noexcept;

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
  /// Asks the run to pause, release memory, then stop the process so that a shell's `fg`
  /// (SIGCONT) resumes it: sends this process the first of its suspend signals (see
  /// set_suspend_signals()). Without them (no SignalBinding maps one), a plain pause.
  void request_suspend() noexcept;
  /// Ends a pause (no effect when not paused). With suspend signals bound it also sends this
  /// process a SIGCONT, which discards a pending suspend (job_control.hpp).
  void request_resume() noexcept;
  /// What a SIGCONT does: ends a pause (the kernel has already discarded a pending suspend).
  void note_continued() noexcept;
  /// Asks for one checkpoint at the next safe point; training continues.
  void request_checkpoint() noexcept;

  bool stop_requested() const noexcept { return stop_code_.load(std::memory_order_acquire) != 0; }
  bool force_requested() const noexcept { return force_.load(std::memory_order_acquire); }
  /// A pause or a suspend is pending.
  bool pause_requested() const noexcept {
    return paused_.load(std::memory_order_acquire) || suspend_requested();
  }
  /// A suspend signal is pending in the kernel: it came, and no SIGCONT (nor resume or stop)
  /// came after it. It ends when wait_while_paused() lets it stop the process, or when a
  /// SIGCONT discards it. Async-signal-safe (one sigpending() when suspend signals are bound).
  bool suspend_requested() const noexcept;
  /// The signals (job_control::bit()s) whose pending state is a suspend request: blocked in the
  /// run's threads, default action kept (SignalBinding sets them; 0: none).
  void set_suspend_signals(std::uint64_t set) noexcept { suspend_signals_.store(set); }
  std::uint64_t suspend_signals() const noexcept { return suspend_signals_.load(); }
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
  /// pause ended (resumed or stopped), false when `timeout` passed first. Meanwhile the suspend
  /// signals are let through in the calling thread (the caller has checkpointed and released
  /// memory by then): a pending one stops the process at once, a new one on arrival. Call it
  /// from the thread that checks the token (the one that made the SignalBinding, or one it made).
  bool wait_while_paused(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// Blocks up to `timeout` or until any request arrives; for loops that sleep between steps.
  void wait_for_request(std::chrono::milliseconds timeout);

  /// Clears every request, for a host program that starts a new run with the same token.
  void reset() noexcept;

  /// Fault injection for tests: `hook` is called on the training thread at each PausePhase.
  void set_phase_hook(std::function<void(PausePhase)> hook) { phase_hook_ = std::move(hook); }
  /// Calls the phase hook, if any (pause_run() and wait_while_paused() do).
  void reached(PausePhase phase) const {
    if (phase_hook_) phase_hook_(phase);
  }

  /// Monotonic clock in nanoseconds (async-signal-safe).
  static std::int64_t monotonic_ns() noexcept;

 private:
  void wake() noexcept;
  bool sem_wait_until(std::int64_t deadline_ns);

  static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need lock-free atomics");
  static_assert(std::atomic<bool>::is_always_lock_free, "signal handlers need lock-free atomics");
  static_assert(std::atomic<std::int64_t>::is_always_lock_free,
                "signal handlers need lock-free atomics");
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "signal handlers need lock-free atomics");

  // stop_code_: 0 none, >0 signal number, -StopReason for the others.
  std::atomic<int> stop_code_{0};
  std::atomic<std::int64_t> stop_time_ns_{0};
  std::atomic<bool> force_{false};
  std::atomic<bool> paused_{false};
  std::atomic<std::uint64_t> suspend_signals_{0};
  std::atomic<int> checkpoint_{0};
  std::atomic<int> waiters_{0};
  sem_t sem_;
  std::function<void(PausePhase)> phase_hook_;
};

}  // namespace yolotrain::lifecycle
