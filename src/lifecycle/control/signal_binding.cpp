#include "yolotrain/lifecycle/control/signal_binding.hpp"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string>

#include "yolotrain/error.hpp"

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
      case SignalAction::Suspend: token->request_suspend(); break;
      case SignalAction::Resume: token->request_resume(); break;
      case SignalAction::Checkpoint: token->request_checkpoint(); break;
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
  sigset_t unblock;
  sigemptyset(&unblock);
  try {
    for (const auto& [signo, action] : options.mapping) {
      if (signo <= 0 || signo >= kMaxSignal || signo == SIGKILL || signo == SIGSTOP) {
        throw Error("SignalBinding: signal " + std::to_string(signo) + " cannot be handled");
      }
      g_actions[signo].store(static_cast<int>(action));
      struct sigaction sa {};
      sa.sa_handler = handle_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      Saved saved{signo, {}};
      if (sigaction(signo, &sa, &saved.previous) != 0) {
        throw Error("SignalBinding: sigaction(" + std::to_string(signo) +
                    ") failed: " + std::strerror(errno));
      }
      saved_.push_back(saved);
      sigaddset(&unblock, signo);
    }
  } catch (...) {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) sigaction(it->signo, &it->previous, nullptr);
    g_token.store(nullptr);
    throw;
  }
  pthread_sigmask(SIG_UNBLOCK, &unblock, &previous_mask_);
}

SignalBinding::~SignalBinding() {
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
