#include "yolotrain/remote/metrics_push.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>

#include "http_send.hpp"
#include "periodic_push.hpp"

namespace yolotrain::remote {
namespace {

std::string base64url(const std::string& s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<std::size_t>(n));
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out.empty() ? "=" : out;  // the gateway's empty value
}

// "/<label>/<value>" or "/<label>@base64/<value>".
std::string path_label(const std::string& label, const std::string& value) {
  if (value.empty() || value.find('/') != std::string::npos) return "/" + label + "@base64/" + base64url(value);
  char* escaped = curl_easy_escape(nullptr, value.c_str(), static_cast<int>(value.size()));
  std::string out = "/" + label + "/" + (escaped ? escaped : value);
  curl_free(escaped);
  return out;
}

}  // namespace

std::string pushgateway_group_url(const MetricsPushOptions& o) {
  std::string base = o.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/metrics" + path_label("job", o.job) + path_label("instance", o.instance);
}

struct MetricsPusher::Impl {
  std::unique_ptr<detail::PeriodicPush> push;
};

MetricsPusher::MetricsPusher(const lifecycle::RunStatus& status, MetricsPushOptions options)
    : impl_(std::make_unique<Impl>()) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  const std::string url = pushgateway_group_url(options);
  auto send = [&status, url](std::chrono::milliseconds timeout) {
    return detail::send({"PUT", url, status.prometheus(), {"Content-Type: text/plain; version=0.0.4; charset=utf-8"},
                         "", timeout});
  };
  impl_->push = std::make_unique<detail::PeriodicPush>(
      send, detail::PeriodicPushOptions{"metrics_push: " + url, options.interval, options.timeout,
                                        options.first_retry, options.max_backoff});
}

MetricsPusher::~MetricsPusher() = default;

void MetricsPusher::push_now() { impl_->push->push_now(); }

bool MetricsPusher::finish(std::chrono::milliseconds wait) { return impl_->push->finish(wait); }

MetricsPusher::Counters MetricsPusher::counters() const {
  const detail::PushCounters c = impl_->push->counters();
  return {c.pushed, c.failed, c.last_error};
}

}  // namespace yolotrain::remote
