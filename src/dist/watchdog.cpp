// Watchdog: the last resort against a collective that never returns.
#include "yolotrain/dist/watchdog.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::dist {
namespace {

std::string seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

void write_stderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

Watchdog::Watchdog(std::chrono::milliseconds grace, OnExpire on_expire, Diagnose diagnose)
    : grace_(grace), on_expire_(std::move(on_expire)), diagnose_(std::move(diagnose)) {
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Watchdog::Scope::~Scope() {
  if (owner_ != nullptr) owner_->finish();
}

Watchdog::Scope Watchdog::watch(std::string what, std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    ++generation_;
    what_ = std::move(what);
    timeout_ = timeout;
    started_ = std::chrono::steady_clock::now();
  }
  cv_.notify_all();
  return Scope(this);
}

void Watchdog::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

int Watchdog::expired() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return expired_;
}

void Watchdog::run() {
  lifecycle::block_lifecycle_signals_in_this_thread();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    const std::uint64_t generation = generation_;
    const auto deadline = started_ + timeout_ + grace_;
    if (cv_.wait_until(lock, deadline) != std::cv_status::timeout) continue;
    if (stopping_ || !armed_ || generation != generation_) continue;
    armed_ = false;
    ++expired_;
    const auto blocked =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
    std::string message = "yolotrain dist: " + what_ + " is still blocked after " + seconds(blocked) +
                          " (timeout " + seconds(timeout_) + " + watchdog grace " + seconds(grace_) + ")";
    lock.unlock();
    if (!on_expire_) write_stderr(message + "; diagnosing...\n");
    if (diagnose_) message += ". " + diagnose_();
    if (on_expire_) {
      on_expire_(message);
    } else {
      write_stderr(message + ". Exiting with code " + std::to_string(kWatchdogExitCode) +
                   " (a peer stopped answering; the run resumes from its last checkpoint when restarted)\n");
      std::_Exit(kWatchdogExitCode);
    }
    lock.lock();
  }
}

}  // namespace yolotrain::dist
