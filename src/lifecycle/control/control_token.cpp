#include "yolotrain/lifecycle/control/control_token.hpp"

#include <csignal>
#include <cstring>
#include <cerrno>
#include <ctime>
#include <unistd.h>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/job_control.hpp"

namespace yolotrain::lifecycle {

const char* to_string(StopReason reason) noexcept {
  switch (reason) {
    case StopReason::None: return "none";
    case StopReason::Signal: return "signal";
    case StopReason::Deadline: return "deadline";
    case StopReason::Api: return "api";
    case StopReason::Remote: return "remote";
    case StopReason::Preemption: return "preemption";
  }
  return "unknown";
}

const char* to_string(PausePhase phase) noexcept {
  switch (phase) {
    case PausePhase::BeforeCheckpoint: return "before-checkpoint";
    case PausePhase::AfterCheckpoint: return "after-checkpoint";
    case PausePhase::AfterRelease: return "after-release";
    case PausePhase::BeforeSelfStop: return "before-self-stop";
    case PausePhase::AfterContinue: return "after-continue";
  }
  return "unknown";
}

ControlToken::ControlToken() {
  if (sem_init(&sem_, 0, 0) != 0) throw Error("ControlToken: sem_init failed");
}

ControlToken::~ControlToken() { sem_destroy(&sem_); }

std::int64_t ControlToken::monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void ControlToken::wake() noexcept {
  // One post per waiter (at least one), so every blocked thread re-checks the state.
  int n = waiters_.load(std::memory_order_acquire);
  for (int i = 0; i < (n > 0 ? n : 1); ++i) sem_post(&sem_);
}

void ControlToken::request_stop(StopReason reason, int signo, bool force) noexcept {
  int code = reason == StopReason::Signal ? signo : -static_cast<int>(reason);
  if (code == 0) code = -static_cast<int>(StopReason::Api);
  int expected = 0;
  if (stop_code_.compare_exchange_strong(expected, code, std::memory_order_acq_rel)) {
    stop_time_ns_.store(monotonic_ns(), std::memory_order_release);
  }
  if (force) force_.store(true, std::memory_order_release);
  wake();
  if (suspend_signals() != 0) job_control::flush();  // a stop outranks a suspend that came before it
}

void ControlToken::adopt_stop(StopReason reason, int signo, bool force) noexcept {
  int code = reason == StopReason::Signal ? signo : -static_cast<int>(reason);
  if (code == 0) code = -static_cast<int>(StopReason::Api);
  // The time goes first: a signal handler seeing the stop reads it for the force-exit window.
  std::int64_t no_time = 0;
  stop_time_ns_.compare_exchange_strong(no_time, monotonic_ns(), std::memory_order_acq_rel);
  stop_code_.store(code, std::memory_order_release);
  if (force) force_.store(true, std::memory_order_release);
  wake();
  if (suspend_signals() != 0) job_control::flush();
}

void ControlToken::request_pause() noexcept {
  paused_.store(true, std::memory_order_release);
  wake();
}

void ControlToken::request_suspend() noexcept {
  const std::uint64_t set = suspend_signals();
  if (set == 0) return request_pause();
  job_control::raise_first(set);  // held by the kernel like the sender's: a later SIGCONT discards it
  wake();
}

void ControlToken::request_resume() noexcept {
  note_continued();
  if (suspend_signals() != 0) job_control::flush();  // discards a pending suspend
}

void ControlToken::note_continued() noexcept {
  paused_.store(false, std::memory_order_release);
  wake();
}

bool ControlToken::suspend_requested() const noexcept { return job_control::pending(suspend_signals()); }

void ControlToken::request_checkpoint() noexcept {
  checkpoint_.fetch_add(1, std::memory_order_acq_rel);
  wake();
}

StopReason ControlToken::stop_reason() const noexcept {
  int code = stop_code_.load(std::memory_order_acquire);
  if (code == 0) return StopReason::None;
  if (code > 0) return StopReason::Signal;
  return static_cast<StopReason>(-code);
}

int ControlToken::stop_signal() const noexcept {
  int code = stop_code_.load(std::memory_order_acquire);
  return code > 0 ? code : 0;
}

std::string ControlToken::stop_description() const {
  int signo = stop_signal();
  if (signo == 0) return to_string(stop_reason());
  const char* abbrev = sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

bool ControlToken::sem_wait_until(std::int64_t deadline_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000LL);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000LL);
  while (sem_clockwait(&sem_, CLOCK_MONOTONIC, &ts) != 0) {
    if (errno == ETIMEDOUT) return false;
    if (errno != EINTR) return false;
  }
  return true;
}

bool ControlToken::wait_while_paused(std::optional<std::chrono::milliseconds> timeout) {
  const std::uint64_t suspend = suspend_signals();
  if (suspend != 0) reached(PausePhase::BeforeSelfStop);
  // From here until the end of the wait a pending suspend signal stops the process (the kernel
  // does, only if no SIGCONT came after it), and a new one stops it on arrival.
  job_control::StopWindow window(suspend);
  if (suspend != 0) reached(PausePhase::AfterContinue);
  const std::int64_t deadline =
      timeout ? monotonic_ns() + static_cast<std::int64_t>(timeout->count()) * 1000000LL : 0;
  waiters_.fetch_add(1, std::memory_order_acq_rel);
  bool ended = true;
  while (pause_requested() && !stop_requested()) {
    // Without a timeout, wake at least once a minute anyway: costs nothing and survives a lost post.
    std::int64_t until = timeout ? deadline : monotonic_ns() + 60'000'000'000LL;
    if (!sem_wait_until(until) && timeout && monotonic_ns() >= deadline) {
      ended = !pause_requested() || stop_requested();
      break;
    }
  }
  waiters_.fetch_sub(1, std::memory_order_acq_rel);
  return ended;
}

void ControlToken::wait_for_request(std::chrono::milliseconds timeout) {
  const std::int64_t deadline = monotonic_ns() + static_cast<std::int64_t>(timeout.count()) * 1000000LL;
  waiters_.fetch_add(1, std::memory_order_acq_rel);
  while (!stop_requested() && !pause_requested() && !checkpoint_requested()) {
    if (!sem_wait_until(deadline) && monotonic_ns() >= deadline) break;
  }
  waiters_.fetch_sub(1, std::memory_order_acq_rel);
}

void ControlToken::reset() noexcept {
  stop_code_.store(0);
  stop_time_ns_.store(0);
  force_.store(false);
  paused_.store(false);
  checkpoint_.store(0);
  while (sem_trywait(&sem_) == 0) {
  }
}

}  // namespace yolotrain::lifecycle
