#include "yolotrain/lifecycle/control/signal_binding.hpp"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/job_control.hpp"

namespace yolotrain::lifecycle {
namespace {

constexpr int kMaxSignal = 65;

// Read by the handler: plain atomics, written only while no handler of ours is installed.
std::atomic<ControlToken*> g_token{nullptr};
std::array<std::atomic<int>, kMaxSignal> g_actions{};
std::atomic<std::int64_t> g_force_after_ns{1'000'000'000};

void handle_signal(int signo) {
  const int saved_errno = errno;
  ControlToken* token = g_token.load(std::memory_order_acquire);
  if (token != nullptr && signo > 0 && signo < kMaxSignal) {
    switch (static_cast<SignalAction>(g_actions[signo].load(std::memory_order_relaxed))) {
      case SignalAction::Stop:
        if (token->stop_requested() &&
            ControlToken::monotonic_ns() - token->stop_time_ns() >=
                g_force_after_ns.load(std::memory_order_relaxed)) {
          _exit(128 + signo);
        }
        token->request_stop(StopReason::Signal, signo);
        break;
      case SignalAction::Pause: token->request_pause(); break;
      case SignalAction::Resume:  // SIGCONT itself has discarded a pending suspend; the others do it
        if (signo == SIGCONT) token->note_continued();
        else token->request_resume();
        break;
      case SignalAction::Checkpoint: token->request_checkpoint(); break;
      case SignalAction::Suspend:  // never here: a suspend signal keeps SIG_DFL and stays pending
      case SignalAction::Ignore: break;
    }
  }
  errno = saved_errno;
}

}  // namespace

SignalMapping default_signal_mapping() {
  return {
      {SIGINT, SignalAction::Stop},      {SIGTERM, SignalAction::Stop},
      {SIGUSR1, SignalAction::Pause},    {SIGUSR2, SignalAction::Resume},
      {SIGCONT, SignalAction::Resume},   {SIGHUP, SignalAction::Checkpoint},
      {SIGTSTP, SignalAction::Suspend},
  };
}

SignalBinding::SignalBinding(ControlToken& token, SignalBindingOptions options) {
  ControlToken* expected = nullptr;
  if (!g_token.compare_exchange_strong(expected, &token)) {
    throw Error("SignalBinding: another SignalBinding is alive in this process; destroy it first");
  }
  g_force_after_ns.store(static_cast<std::int64_t>(options.force_exit_after.count()) * 1000000LL);
  sigset_t handled;  // every mapped signal: each handler's sa_mask
  sigemptyset(&handled);
  for (const auto& [signo, action] : options.mapping) {
    if (signo > 0 && signo < kMaxSignal && signo != SIGKILL && signo != SIGSTOP) sigaddset(&handled, signo);
  }
  try {
    for (const auto& [signo, action] : options.mapping) {
      if (signo <= 0 || signo >= kMaxSignal || signo == SIGKILL || signo == SIGSTOP) {
        throw Error("SignalBinding: signal " + std::to_string(signo) + " cannot be handled");
      }
      if (action == SignalAction::Suspend && !job_control::can_suspend(signo)) {
        throw Error("SignalBinding: signal " + std::to_string(signo) +
                    " cannot suspend: only SIGTSTP, SIGTTIN and SIGTTOU can (their default action stops the "
                    "process, which the kernel keeps in order with SIGCONT)");
      }
      g_actions[signo].store(static_cast<int>(action));
      struct sigaction sa {};
      // A suspend signal keeps its default action (stop) and stays blocked: pending, it is the request.
      sa.sa_handler = action == SignalAction::Suspend ? SIG_DFL : handle_signal;
      // No handler interrupts another: with several pending, the kernel would otherwise set up a
      // frame for each at once and run the last (highest numbered) first.
      sa.sa_mask = handled;
      sa.sa_flags = SA_RESTART;
      Saved saved{signo, {}};
      if (sigaction(signo, &sa, &saved.previous) != 0) {
        throw Error("SignalBinding: sigaction(" + std::to_string(signo) +
                    ") failed: " + std::strerror(errno));
      }
      saved_.push_back(saved);
      if (action == SignalAction::Suspend) suspend_signals_ |= job_control::bit(signo);
      else handled_signals_ |= job_control::bit(signo);
    }
  } catch (...) {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) sigaction(it->signo, &it->previous, nullptr);
    g_token.store(nullptr);
    throw;
  }
  // Every thread there is blocks them all, then this one takes the handled ones (and the threads it
  // starts from now on inherit that); the suspend signals stay pending, held by the kernel for the token.
  pthread_sigmask(SIG_SETMASK, nullptr, &previous_mask_);
  job_control::block_in_every_thread(handled_signals_ | suspend_signals_);
  job_control::mask(handled_signals_, false);
  token.set_suspend_signals(suspend_signals_);
}

SignalBinding::~SignalBinding() {
  ControlToken* token = g_token.load();
  if (token != nullptr) token->set_suspend_signals(0);
  job_control::discard(suspend_signals_);  // a suspend left pending must not stop the process once unblocked
  if (!ignoring_) {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) sigaction(it->signo, &it->previous, nullptr);
  }
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
  g_token.store(nullptr, std::memory_order_release);
}

void SignalBinding::ignore_from_now() noexcept {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (const auto& s : saved_) sigaction(s.signo, &ignore, nullptr);
  ignoring_ = true;
}

std::vector<int> SignalBinding::signals() const {
  std::vector<int> out;
  for (const auto& s : saved_) out.push_back(s.signo);
  return out;
}

void block_lifecycle_signals_in_this_thread() noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCONT, SIGHUP, SIGTSTP}) sigaddset(&set, signo);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace yolotrain::lifecycle
