#pragma once
// A send repeated from a thread of its own — at once, every `interval`, at each push_now() — with
// exponential backoff after a failure, a new error said once on stderr, and a bounded last send at
// finish(). What the Pushgateway client (metrics_push.cpp) and the Kubeflow Trainer progress client
// (kubeflow_progress.cpp) share; private to yolotrain::remote.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace yolotrain::remote::detail {

struct PeriodicPushOptions {
  std::string what;  ///< names it in messages: "metrics_push: http://gateway:9091/metrics/job/..."
  std::chrono::milliseconds interval{30000};
  std::chrono::milliseconds timeout{5000};
  std::chrono::milliseconds first_retry{1000};
  std::chrono::milliseconds max_backoff{60000};
  std::chrono::milliseconds min_gap{0};  ///< no two sends closer than this (a push_now() waits)
};

struct PushCounters {
  std::uint64_t pushed = 0;  ///< sends that succeeded
  std::uint64_t failed = 0;  ///< attempts that failed
  std::string last_error;    ///< "" after a success
};

class PeriodicPush {
 public:
  /// One send within `timeout`: "" on success, else why not.
  using Send = std::function<std::string(std::chrono::milliseconds timeout)>;
  PeriodicPush(Send send, PeriodicPushOptions options);
  /// finish(options.timeout) if not done.
  ~PeriodicPush();
  /// Asks for a send as soon as the thread is free.
  void push_now();
  /// Stops the thread, then sends once more, retrying until it succeeds or `wait` has passed.
  bool finish(std::chrono::milliseconds wait);
  PushCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::remote::detail
