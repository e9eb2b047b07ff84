#include "yolotrain/remote/kubeflow_progress.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "http_send.hpp"
#include "periodic_push.hpp"

namespace yolotrain::remote {
namespace {

constexpr std::size_t kMaxText = 64, kMaxMetrics = 256;

std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::string number_text(double v) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.6g", v);
  return out;
}

// The token file's content without its trailing newline; "" when it cannot be read.
std::string read_token(const std::string& file) {
  std::ifstream in(file);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

}  // namespace

std::optional<KubeflowProgressOptions> kubeflow_progress_from_environment() {
  KubeflowProgressOptions o;
  o.url = variable("KUBEFLOW_TRAINER_SERVER_URL");
  if (o.url.empty()) return std::nullopt;
  o.token_file = variable("KUBEFLOW_TRAINER_SERVER_TOKEN");
  o.ca_file = variable("KUBEFLOW_TRAINER_SERVER_CA_CERT");
  return o;
}

std::string kubeflow_progress_payload(const KubeflowUpdate& u, std::chrono::system_clock::time_point time) {
  nlohmann::ordered_json status;
  status["progressPercentage"] = static_cast<int>(std::clamp(std::floor(u.progress), 0.0, 100.0));
  if (u.remaining_s && std::isfinite(*u.remaining_s)) {
    status["estimatedRemainingSeconds"] = static_cast<std::int64_t>(std::clamp(std::round(*u.remaining_s), 0.0, 2e9));
  }
  auto metrics = nlohmann::ordered_json::array();
  for (const auto& [name, value] : u.metrics) {
    if (metrics.size() == kMaxMetrics || name.empty() || !std::isfinite(value)) continue;
    metrics.push_back({{"name", name.substr(0, kMaxText)}, {"value", number_text(value)}});
  }
  if (!metrics.empty()) status["metrics"] = metrics;
  status["lastUpdatedTime"] = rfc3339(time);
  return nlohmann::ordered_json{{"trainerStatus", status}}.dump();
}

struct KubeflowProgress::Impl {
  KubeflowProgressOptions o;
  mutable std::mutex mutex;
  KubeflowUpdate update;
  std::unique_ptr<detail::PeriodicPush> push;

  std::string send(std::chrono::milliseconds timeout) {
    KubeflowUpdate u;
    {
      std::lock_guard<std::mutex> lock(mutex);
      u = update;
    }
    std::vector<std::string> headers{"Content-Type: application/json"};
    if (!o.token_file.empty()) {
      const std::string token = read_token(o.token_file);
      if (token.empty()) return "cannot read the token file " + o.token_file;
      headers.push_back("Authorization: Bearer " + token);
    }
    return detail::send(
        {"POST", o.url, kubeflow_progress_payload(u, std::chrono::system_clock::now()), headers, o.ca_file, timeout});
  }
};

KubeflowProgress::KubeflowProgress(KubeflowProgressOptions options) : impl_(std::make_unique<Impl>()) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  impl_->o = std::move(options);
  const auto& o = impl_->o;
  impl_->push = std::make_unique<detail::PeriodicPush>(
      [impl = impl_.get()](std::chrono::milliseconds timeout) { return impl->send(timeout); },
      detail::PeriodicPushOptions{"kubeflow progress: " + o.url, o.interval, o.timeout, std::chrono::seconds(1),
                                  std::chrono::seconds(60), o.min_gap});
}

KubeflowProgress::~KubeflowProgress() = default;

void KubeflowProgress::set_progress(double percent, std::optional<double> remaining_s, bool now) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->update.progress = percent;
    impl_->update.remaining_s = remaining_s;
  }
  if (now) impl_->push->push_now();
}

void KubeflowProgress::set_metrics(std::vector<std::pair<std::string, double>> metrics) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->update.metrics = std::move(metrics);
  }
  impl_->push->push_now();
}

bool KubeflowProgress::finish(std::chrono::milliseconds wait) { return impl_->push->finish(wait); }

std::uint64_t KubeflowProgress::sent() const { return impl_->push->counters().pushed; }

std::string KubeflowProgress::last_error() const { return impl_->push->counters().last_error; }

}  // namespace yolotrain::remote
