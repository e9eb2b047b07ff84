#pragma once

#include <cstdint>

namespace yolotrain::lifecycle::job_control {

/// Job control without a race (docs/lifecycle.md "Suspend: the order of job-control signals").
///
/// A suspend (Ctrl+Z, `kill -TSTP`) must checkpoint and release memory before the process stops,
/// and a SIGCONT sent at any moment after the SIGTSTP must leave the run going. A flag set by a
/// handler and a later kill(getpid(), SIGSTOP) cannot promise that: a SIGCONT arriving between the
/// flag's check and the SIGSTOP is spent before the stop, and the process then sleeps with nobody
/// left to continue it. So the stop is never sent by us: the suspend signals (SIGTSTP, SIGTTIN,
/// SIGTTOU, whose default action stops the process) keep that default action but stay blocked in
/// the run's threads. The sender's signal then waits in the kernel as the pending request itself;
/// the training thread sees it (sigpending) at a safe point, runs the pause sequence, and unblocks
/// it: the kernel stops the process there, exactly as a shell expects. The kernel also keeps the
/// order for us: generating SIGCONT discards every pending stop signal and a stop signal discards
/// a pending SIGCONT (kernel/signal.c prepare_signal), so whichever came last wins, with no window.
/// A resume or stop asked any other way (SIGUSR2, SIGTERM, the API) is made a SIGCONT to ourselves
/// (flush()), which discards a pending suspend the same way.

/// A set of signal numbers (1..63) as bits.
using SignalSet = std::uint64_t;
constexpr SignalSet bit(int signo) { return SignalSet{1} << signo; }

/// True for SIGTSTP, SIGTTIN and SIGTTOU: the signals whose default action stops the process and
/// which can be blocked, the only ones a suspend can be made of.
bool can_suspend(int signo) noexcept;

/// Whether any signal of `set` is pending for this process and blocked in this thread
/// (async-signal-safe).
bool pending(SignalSet set) noexcept;

/// Blocks (`block` true) or unblocks the signals of `set` in the calling thread.
void mask(SignalSet set, bool block) noexcept;

/// Blocks the signals of `set` in the calling thread and in every other thread of the process,
/// those started before it included (OpenBLAS starts its pool when the library is loaded, before
/// main()): each is sent SIGRTMIN once, whose handler adds them to the mask that thread returns
/// to. False (and nothing sent) when SIGRTMIN is already handled by the program, or when a thread
/// that blocks SIGRTMIN has not answered within two seconds: a thread left out may receive one of
/// them itself (a suspend signal then stops the process at once, without the pause sequence).
bool block_in_every_thread(SignalSet set);

/// Discards the signals of `set` pending for the calling thread or the process (blocked in it).
void discard(SignalSet set) noexcept;

/// Sends this process a SIGCONT: a pending suspend is discarded by the kernel (async-signal-safe).
void flush() noexcept;

/// Sends this process the first signal of `set` (a suspend asked by the program itself).
void raise_first(SignalSet set) noexcept;

/// While alive, the signals of `set` are unblocked in the calling thread: one pending now, or one
/// arriving meanwhile, stops the whole process here, at a point where stopping is safe; the
/// constructor returns once the process has been continued.
class StopWindow {
 public:
  explicit StopWindow(SignalSet set) noexcept : set_(set) { mask(set_, false); }
  ~StopWindow() { mask(set_, true); }
  StopWindow(const StopWindow&) = delete;
  StopWindow& operator=(const StopWindow&) = delete;

 private:
  SignalSet set_;
};

}  // namespace yolotrain::lifecycle::job_control
