#pragma once

#include <csignal>
#include <map>
#include <vector>

#include "yolotrain/lifecycle/control/control_token.hpp"

namespace yolotrain::lifecycle {

/// What a signal asks of a run.
enum class SignalAction {
  Stop,        ///< graceful stop with a checkpoint (a second one >= 1 s later forces _exit(128+signo))
  Pause,       ///< pause at the next safe point
  Suspend,     ///< pause, release memory, then stop the process so `fg` resumes it (Ctrl+Z); only for
               ///< SIGTSTP, SIGTTIN, SIGTTOU, which keep their default action and stay blocked
               ///< (job_control.hpp)
  Resume,      ///< end a pause
  Checkpoint,  ///< write a checkpoint now and continue
  Ignore,      ///< do nothing (the signal is caught so its default action does not run)
};

/// Signal number -> action.
using SignalMapping = std::map<int, SignalAction>;

/// The default mapping: SIGINT/SIGTERM stop, SIGUSR1 pause, SIGUSR2/SIGCONT resume, SIGHUP
/// checkpoint now, SIGTSTP suspend.
SignalMapping default_signal_mapping();

/// Options of a SignalBinding.
struct SignalBindingOptions {
  SignalMapping mapping = default_signal_mapping();
  /// A second stop signal at least this long after the first forces an immediate exit; sooner
  /// ones are duplicates (torchrun forwards a terminal's Ctrl+C ~10 ms after the worker got it).
  std::chrono::milliseconds force_exit_after{1000};
};

/// RAII: while alive, the mapped signals only set requests on `token` (their handlers touch
/// nothing else, so they are async-signal-safe). They are blocked in every other thread that
/// exists when the binding is made, those started before main() included
/// (job_control::block_in_every_thread()), and no handler interrupts another: signals pending
/// together on one thread are taken lowest number first. Threads the calling thread starts later
/// inherit its mask and may take them too. Keep the binding on a thread that lives as long as it.
/// The suspend signals are not handled: blocked everywhere, the token reads them as pending
/// (job_control.hpp).
/// The destructor discards a pending suspend signal, then restores the previous handlers and the
/// calling thread's signal mask.
/// One binding may be alive at a time in a process; creating a second throws yolotrain::Error.
class SignalBinding {
 public:
  explicit SignalBinding(ControlToken& token, SignalBindingOptions options = {});
  ~SignalBinding();
  SignalBinding(const SignalBinding&) = delete;
  SignalBinding& operator=(const SignalBinding&) = delete;

  /// The signals this binding handles.
  std::vector<int> signals() const;

  /// The run is over: from now on the bound signals are ignored (SIG_IGN), and the destructor
  /// leaves them ignored instead of restoring the previous handlers. For a program that exits
  /// once its run has returned: restored default actions would let a late signal (a scheduler's
  /// SIGUSR2 or SIGHUP, a Kubernetes SIGTERM racing the end) kill a finished process, whose exit
  /// status would then say "killed by a signal" (140, 129, 143) instead of what the run did.
  void ignore_from_now() noexcept;

 private:
  struct Saved {
    int signo;
    struct sigaction previous;
  };
  std::vector<Saved> saved_;
  std::uint64_t suspend_signals_ = 0;  // job_control::bit()s of the signals mapped to Suspend
  std::uint64_t handled_signals_ = 0;  // and of the others
  sigset_t previous_mask_{};
  bool ignoring_ = false;
};

/// Blocks the default-mapped signals in the calling thread (and so in every thread it starts).
/// Library threads call it first so that signals land on the host's threads, never on theirs.
void block_lifecycle_signals_in_this_thread() noexcept;

}  // namespace yolotrain::lifecycle
