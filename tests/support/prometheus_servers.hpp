#pragma once

// Real Prometheus servers for the control endpoint's tests: Debian's `prometheus` scraping an
// endpoint, and `prometheus-pushgateway` receiving pushes (both installed by
// scripts/install-deps.sh), each on a free port of 127.0.0.1 with its data in a temporary folder,
// in its own process group, SIGKILLed if the test process dies (s3_server.hpp's process helpers).
//
//   if (auto why = yolotrain::test::Pushgateway::unavailable()) { WARN(*why); return; }
//   yolotrain::test::Pushgateway gateway;            // gateway.url(): http://127.0.0.1:PORT
//   yolotrain::test::Prometheus prom("127.0.0.1:8080");  // scrapes it every second
//   auto result = prom.query("yolotrain_step");        // the query API's data.result

#include <nlohmann/json.hpp>

#include "http_client.hpp"
#include "s3_server.hpp"
#include "test_support.hpp"

namespace yolotrain::test {

namespace prometheus_detail {

/// Percent-encodes `s` for a URL's query.
inline std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// Waits until something answers on `port` or `pid` ends; throws with the log then.
inline void wait_listening(const std::string& what, pid_t& pid, int port, const std::filesystem::path& log,
                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!s3_detail::port_open(port)) {
    if (s3_detail::has_ended(pid) || std::chrono::steady_clock::now() >= deadline) {
      s3_detail::stop(pid, SIGKILL, std::chrono::milliseconds(0));
      throw std::runtime_error(what + " did not listen on port " + std::to_string(port) + "; its log:\n" +
                               s3_detail::tail(s3_detail::slurp(log)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

inline std::optional<std::string> missing(const char* program, const char* package) {
  if (s3_detail::which(program).empty()) {
    return std::string(program) + " is not installed (apt-get install " + package + ", scripts/install-deps.sh)";
  }
  return std::nullopt;
}

}  // namespace prometheus_detail

/// prometheus-pushgateway on 127.0.0.1 (its documented API: PUT/GET /metrics/job/...).
class Pushgateway {
 public:
  static std::optional<std::string> unavailable() {
    return prometheus_detail::missing("prometheus-pushgateway", "prometheus-pushgateway");
  }
  Pushgateway() : dir_(s3_detail::make_temp_dir("yolotrain-pushgateway")), port_(free_port()) {
    start();
  }
  ~Pushgateway() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Pushgateway(const Pushgateway&) = delete;
  Pushgateway& operator=(const Pushgateway&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  /// What the gateway holds, in the Prometheus text format (GET /metrics).
  std::string metrics() const { return http_request(port_, "GET", "/metrics", "", std::chrono::seconds(10)).body; }
  /// SIGKILLs it: what it held is gone (no persistence file).
  void kill() { s3_detail::stop(pid_, SIGKILL, std::chrono::milliseconds(0)); }
  /// Starts it again on the same port, empty.
  void restart() {
    kill();
    start();
  }
  std::string log() const { return s3_detail::slurp(dir_ / "pushgateway.log"); }

 private:
  void start() {
    pid_ = s3_detail::spawn({s3_detail::which("prometheus-pushgateway"),
                             "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
                            dir_ / "pushgateway.log");
    prometheus_detail::wait_listening("prometheus-pushgateway", pid_, port_, dir_ / "pushgateway.log",
                                      std::chrono::seconds(30));
  }
  std::filesystem::path dir_;
  int port_;
  pid_t pid_ = -1;
};

/// prometheus on 127.0.0.1 scraping one target every second (with a bearer token from a file when
/// one is given).
class Prometheus {
 public:
  static std::optional<std::string> unavailable() { return prometheus_detail::missing("prometheus", "prometheus"); }
  explicit Prometheus(const std::string& target, const std::filesystem::path& token_file = {})
      : dir_(s3_detail::make_temp_dir("yolotrain-prometheus")), port_(free_port()) {
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: yolotrain\n    metrics_path: /metrics\n"
        << (token_file.empty() ? "" : "    authorization:\n      credentials_file: " + token_file.string() + "\n")
        << "    static_configs:\n      - targets: ['" << target << "']\n";
    pid_ = s3_detail::spawn({s3_detail::which("prometheus"), "--config.file=" + (dir_ / "prometheus.yml").string(),
                             "--storage.tsdb.path=" + (dir_ / "data").string(),
                             "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
                            dir_ / "prometheus.log");
    prometheus_detail::wait_listening("prometheus", pid_, port_, dir_ / "prometheus.log", std::chrono::seconds(60));
  }
  ~Prometheus() {
    s3_detail::stop(pid_, SIGTERM, std::chrono::seconds(5));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Prometheus(const Prometheus&) = delete;
  Prometheus& operator=(const Prometheus&) = delete;

  /// The query API's data.result for an instant query (an empty array while nothing matches).
  nlohmann::json query(const std::string& promql) const {
    const HttpResponse r = http_request(port_, "GET", "/api/v1/query?query=" + prometheus_detail::url_encode(promql),
                                        "", std::chrono::seconds(10));
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || j.is_discarded() || !j.contains("data")) return nlohmann::json::array();
    return j["data"]["result"];
  }
  /// The scrape target's health as Prometheus reports it ("up", "down", "unknown").
  std::string target_health() const {
    const HttpResponse r = http_request(port_, "GET", "/api/v1/targets", "", std::chrono::seconds(10));
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200 || j.is_discarded()) return "";
    const auto& active = j["data"]["activeTargets"];
    return active.empty() ? "" : active[0].value("health", "");
  }
  std::string log() const { return s3_detail::slurp(dir_ / "prometheus.log"); }

 private:
  std::filesystem::path dir_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace yolotrain::test
