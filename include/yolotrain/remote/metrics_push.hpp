#pragma once
// yolotrain::remote::MetricsPusher — a run's figures pushed to a Prometheus Pushgateway, for runs
// Prometheus cannot scrape (a batch job behind a NAT, a short run): its documented HTTP API, PUT
// <gateway>/metrics/job/<job>/instance/<instance> with the text GET /metrics answers.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::remote {

struct MetricsPushOptions {
  std::string url;               ///< the Pushgateway: http(s)://HOST:PORT, a path prefix allowed
  std::string job = "yolotrain";  ///< the group's job label
  std::string instance;          ///< the group's instance label: the run's name
  std::chrono::milliseconds interval{30000};     ///< between pushes (push_now() adds some)
  std::chrono::milliseconds timeout{5000};       ///< one push's connection and transfer
  std::chrono::milliseconds first_retry{1000};   ///< a failed push is retried after this, doubling
  std::chrono::milliseconds max_backoff{60000};  ///< ... up to this
};

/// "<url>/metrics/job/<job>/instance/<instance>": each label value escaped for a URL path, or, when
/// it holds a '/' or is empty, in the Pushgateway's base64url form (`instance@base64/...`).
std::string pushgateway_group_url(const MetricsPushOptions& options);

/// Pushes `status`'s Prometheus text from a thread of its own: at once, then every `interval` and
/// at each push_now(); a failed push (the gateway down, an HTTP error) is retried with exponential
/// backoff and reported once per new error on stderr. Nothing here ever blocks the caller's thread
/// but finish(), which is bounded.
class MetricsPusher {
 public:
  MetricsPusher(const lifecycle::RunStatus& status, MetricsPushOptions options);
  /// finish(options.timeout) if not done.
  ~MetricsPusher();
  MetricsPusher(const MetricsPusher&) = delete;
  MetricsPusher& operator=(const MetricsPusher&) = delete;

  /// Asks for a push as soon as the thread is free (an epoch's end, a change of state).
  void push_now();
  /// Stops the thread, then pushes the figures as they are now (the run's final state), retrying
  /// until it succeeds or `wait` has passed. Returns whether the last push reached the gateway.
  bool finish(std::chrono::milliseconds wait);

  struct Counters {
    std::uint64_t pushed = 0;  ///< pushes the gateway accepted
    std::uint64_t failed = 0;  ///< attempts that failed
    std::string last_error;    ///< "" after a success
  };
  Counters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::remote
