#include "yolotrain/cloud/notice_watcher.hpp"

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::cloud {

struct NoticeWatcher::Impl {
  std::unique_ptr<NoticeSource> source;
  NoticeWatcherOptions o;
  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::optional<Notice> notice;
  std::string problem;  // the last poll's failure, "" when it answered
  std::atomic<std::uint64_t> polls{0};
  std::thread thread;

  void say_problem(const std::string& why) {
    if (why == problem) return;
    problem = why;
    if (o.on_problem) {
      o.on_problem(why);
    } else if (!why.empty()) {
      std::cerr << "preemption: " << to_string(source->cloud()) << ": " << why
                << " (training goes on; polling again every " << o.interval.count() / 1000.0 << " s)" << std::endl;
    }
  }

  // A notice is new when none was seen, or its event or deadline changed (a later notice replaces
  // an earlier one; none replaces a notice).
  void take(const Notice& n) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (notice && notice->event == n.event && notice->deadline == n.deadline && notice->id == n.id) return;
      notice = n;
    }
    if (o.on_notice) o.on_notice(n);
  }

  void poll_once() {
    try {
      if (auto n = source->poll()) take(*n);
      say_problem("");
    } catch (const std::exception& e) {
      say_problem(e.what());
    }
    ++polls;
  }

  void run() {
    lifecycle::block_lifecycle_signals_in_this_thread();  // signals land on the host's threads
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      lock.unlock();
      poll_once();
      lock.lock();
      wake.wait_for(lock, o.interval, [&] { return stopping; });
    }
  }
};

NoticeWatcher::NoticeWatcher(std::unique_ptr<NoticeSource> source, NoticeWatcherOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->source = std::move(source);
  impl_->o = std::move(options);
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

NoticeWatcher::~NoticeWatcher() { stop(); }

std::optional<Notice> NoticeWatcher::notice() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->notice;
}

std::uint64_t NoticeWatcher::polls() const { return impl_->polls.load(); }

std::string NoticeWatcher::acknowledge() {
  const auto n = notice();
  if (!n) return "";
  stop();  // the source is the watcher thread's until then
  try {
    impl_->source->acknowledge(*n);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

void NoticeWatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Cloud NoticeWatcher::cloud() const { return impl_->source->cloud(); }

std::string NoticeWatcher::endpoint() const { return impl_->source->endpoint(); }

}  // namespace yolotrain::cloud
