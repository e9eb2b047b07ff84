#include "periodic_push.hpp"

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::remote::detail {

using Clock = std::chrono::steady_clock;

struct PeriodicPush::Impl {
  Send send;
  PeriodicPushOptions o;
  mutable std::mutex mutex;
  std::condition_variable wake;
  bool urgent = false, stopping = false, finished = false;
  PushCounters counters;
  std::thread thread;

  // One send, counted; a new error said once on stderr.
  bool push_once(std::chrono::milliseconds timeout) {
    const std::string error = send(timeout);
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty()) {
      ++counters.pushed;
      counters.last_error.clear();
      return true;
    }
    ++counters.failed;
    if (error != counters.last_error) {
      std::cerr << "yolotrain: " << o.what << ": " << error << " (retried with backoff)" << std::endl;
    }
    counters.last_error = error;
    return false;
  }

  void run() {
    lifecycle::block_lifecycle_signals_in_this_thread();
    auto backoff = o.first_retry;
    auto next = Clock::now();
    Clock::time_point last{};
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      wake.wait_until(lock, next, [&] { return stopping || urgent || Clock::now() >= next; });
      if (stopping) break;
      urgent = false;
      if (Clock::now() < last + o.min_gap) {  // too soon after the last send: at the gap's end
        next = last + o.min_gap;
        continue;
      }
      lock.unlock();
      const bool ok = push_once(o.timeout);
      last = Clock::now();
      lock.lock();
      next = Clock::now() + (ok ? o.interval : backoff);
      backoff = ok ? o.first_retry : std::min(backoff * 2, o.max_backoff);
    }
  }
};

PeriodicPush::PeriodicPush(Send send, PeriodicPushOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->send = std::move(send);
  impl_->o = std::move(options);
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

PeriodicPush::~PeriodicPush() {
  if (!impl_->finished) finish(impl_->o.timeout);
}

void PeriodicPush::push_now() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->urgent = true;
  }
  impl_->wake.notify_all();
}

bool PeriodicPush::finish(std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
    impl_->finished = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  for (auto retry = std::chrono::milliseconds(250);; retry *= 2) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (impl_->push_once(std::clamp(left, std::chrono::milliseconds(100), impl_->o.timeout))) return true;
    if (Clock::now() + retry >= until) return false;
    std::this_thread::sleep_for(retry);
  }
}

PushCounters PeriodicPush::counters() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->counters;
}

}  // namespace yolotrain::remote::detail
