#include "yolotrain/remote/metrics_push.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::remote {
namespace {

using Clock = std::chrono::steady_clock;

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

std::size_t keep_body(char* data, std::size_t size, std::size_t n, void* into) {
  auto& body = *static_cast<std::string*>(into);
  if (body.size() < 512) body.append(data, std::min<std::size_t>(size * n, 512 - body.size()));
  return size * n;
}

// One PUT of `text`; "" on success, else why not.
std::string put(const std::string& url, const std::string& text, std::chrono::milliseconds timeout) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return "curl_easy_init failed";
  std::string body;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: text/plain; version=0.0.4; charset=utf-8");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(text.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &keep_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return curl_easy_strerror(rc);
  if (code / 100 != 2) return "HTTP " + std::to_string(code) + ": " + body.substr(0, body.find('\n'));
  return "";
}

}  // namespace

std::string pushgateway_group_url(const MetricsPushOptions& o) {
  std::string base = o.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/metrics" + path_label("job", o.job) + path_label("instance", o.instance);
}

struct MetricsPusher::Impl {
  const lifecycle::RunStatus& status;
  MetricsPushOptions o;
  std::string url;
  mutable std::mutex mutex;
  std::condition_variable wake;
  bool urgent = false, stopping = false, finished = false;
  Counters counters;
  std::thread thread;

  Impl(const lifecycle::RunStatus& s, MetricsPushOptions options)
      : status(s), o(std::move(options)), url(pushgateway_group_url(o)) {}

  // One push, counted; a new error said once on stderr.
  bool push_once(std::chrono::milliseconds timeout) {
    const std::string error = put(url, status.prometheus(), timeout);
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty()) {
      ++counters.pushed;
      counters.last_error.clear();
      return true;
    }
    ++counters.failed;
    if (error != counters.last_error) {
      std::cerr << "yolotrain: metrics_push: " << url << ": " << error << " (retried with backoff)" << std::endl;
    }
    counters.last_error = error;
    return false;
  }

  void run() {
    lifecycle::block_lifecycle_signals_in_this_thread();
    auto backoff = o.first_retry;
    auto next = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      wake.wait_until(lock, next, [&] { return stopping || urgent || Clock::now() >= next; });
      if (stopping) break;
      urgent = false;
      lock.unlock();
      const bool ok = push_once(o.timeout);
      lock.lock();
      next = Clock::now() + (ok ? o.interval : backoff);
      backoff = ok ? o.first_retry : std::min(backoff * 2, o.max_backoff);
    }
  }
};

MetricsPusher::MetricsPusher(const lifecycle::RunStatus& status, MetricsPushOptions options)
    : impl_(std::make_unique<Impl>(status, std::move(options))) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  impl_->thread = std::thread([this] { impl_->run(); });
}

MetricsPusher::~MetricsPusher() {
  if (!impl_->finished) finish(impl_->o.timeout);
}

void MetricsPusher::push_now() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->urgent = true;
  }
  impl_->wake.notify_all();
}

bool MetricsPusher::finish(std::chrono::milliseconds wait) {
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

MetricsPusher::Counters MetricsPusher::counters() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->counters;
}

}  // namespace yolotrain::remote
