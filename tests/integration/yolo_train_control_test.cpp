// yolo_train driven over HTTP (control=): the same outcomes as the signals (exact resume), the
// token kept out of every file, and real Prometheus servers: one scraping the endpoint, a
// Pushgateway receiving metrics_push=, killed and restarted mid-run; Kubeflow Trainer's status
// endpoint (a fake one checking the token and the payload) receiving the run's progress.
#include <ATen/ATen.h>

#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"

#include "catch.hpp"

#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "fake_http_server.hpp"
#include "http_client.hpp"
#include "prometheus_servers.hpp"
#include "self_signed_cert.hpp"
#include "test_support.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;
using yt::baseline;
using yt::weights_of;
using yt::train_args;

namespace {

// The port of the run's "control: listening on http://127.0.0.1:PORT" line, once printed.
int control_port(const fs::path& out) {
  int port = 0;
  yt::wait_until(
      [&] {
        std::smatch m;
        const std::string text = yt::slurp(out);
        if (std::regex_search(text, m, std::regex("listening on http://127\\.0\\.0\\.1:([0-9]+)"))) {
          port = std::stoi(m[1].str());
        }
        return port > 0;
      },
      120s);
  return port;
}

// A yolo_train run with its control endpoint on a free port of 127.0.0.1, once it listens.
struct ControlledRun {
  yt::Child child;
  int port = 0;
};
ControlledRun start_controlled(const yt::TempDir& tmp, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), "control=127.0.0.1:0");
  ControlledRun run{yt::spawn(train_args(tmp.path(), extra), tmp / "out.txt")};
  run.port = control_port(tmp / "out.txt");
  REQUIRE(run.port > 0);
  return run;
}

// A figure of the run's status.json, once there.
std::optional<double> status_figure(const fs::path& dir, const std::string& name) {
  const auto s = yt::status_of(dir);
  if (!s.contains("metrics") || !s["metrics"].contains(name)) return std::nullopt;
  return s["metrics"][name].get<double>();
}

// The value of the first series of `family` in a Prometheus text whose labels contain `labels`.
std::optional<double> series_value(const std::string& text, const std::string& family, const std::string& labels) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) == 0 && line.find(labels) != std::string::npos) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("over HTTP: pause, checkpoint and resume leave the weights of an uninterrupted run",
          "[integration][control]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  auto [child, port] = start_controlled(tmp);
  REQUIRE(yt::wait_for_step(dir, 2));
  auto r = yt::http_request(port, "POST", "/v1/pause?wait=120");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "paused");
  CHECK(yt::status_of(dir)["state"] == "paused");  // the answer comes once status.json says it
  const std::int64_t paused_at = yt::status_of(dir)["step"];
  CHECK(r.json()["step"] == paused_at);
  CHECK(paused_at <= r.json()["acts_at_step"].get<std::int64_t>());
  CHECK(yt::status_of(dir)["last_checkpoint"]["step"] == paused_at);
  r = yt::http_request(port, "POST", "/v1/checkpoint?wait=60");  // the pause's checkpoint holds this step
  CHECK(r.status == 200);
  r = yt::http_request(port, "POST", "/v1/resume?wait=120");
  CHECK(r.status == 200);
  r = yt::http_request(port, "POST", "/v1/checkpoint?wait=120");
  CHECK(r.status == 200);
  const auto code = yt::wait_exit(child, 300s);
  INFO(yt::slurp(tmp / "out.txt"));
  CHECK(code == 0);
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("a stop over HTTP checkpoints and exits 75, and resume=true ends with the same weights",
          "[integration][control]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  auto [child, port] = start_controlled(tmp);
  REQUIRE(yt::wait_for_step(dir, 3));
  const auto r = yt::http_request(port, "POST", "/v1/stop?wait=120");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "stopped");
  const auto code = yt::wait_exit(child, 120s);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 75);
  CHECK_THAT(out, Catch::Contains("stopped (remote)"));
  const auto status = yt::status_of(dir);
  CHECK(status["last_checkpoint"]["step"] == status["step"]);
  const yt::Finished resumed = yt::run_to_end(train_args(tmp.path(), {"resume=true"}), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK(weights_of(dir) == baseline());
}

TEST_CASE("with a token: none or a wrong one is 401 and changes nothing, the token is in no file or log",
          "[integration][control]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  const std::string token = "tok-" + std::to_string(::getpid()) + "-9f8e7d6c5b4a";
  yolotrain::lifecycle::atomic_write(tmp / "token", token + "\n");
  auto [child, port] = start_controlled(tmp, {"control_token_file=" + (tmp / "token").string()});
  REQUIRE(yt::wait_for_step(dir, 2));
  CHECK(yt::http_request(port, "POST", "/v1/stop").status == 401);
  CHECK(yt::http_request(port, "POST", "/v1/pause", "not-" + token).status == 401);
  CHECK(yt::http_request(port, "GET", "/v1/status", token.substr(1)).status == 401);
  const std::int64_t at = yt::status_of(dir)["step"];
  REQUIRE(yt::wait_for_step(dir, at + 2));  // it trains on: nothing was asked of it
  CHECK(yt::status_of(dir)["state"] == "running");
  auto r = yt::http_request(port, "POST", "/v1/pause?wait=120", token);
  CHECK(r.status == 200);
  r = yt::http_request(port, "GET", "/metrics", token);
  CHECK(series_value(r.body, "yolotrain_state", "state=\"paused\"") == 1.0);
  r = yt::http_request(port, "POST", "/v1/stop?wait=120", token);
  CHECK(r.status == 200);
  CHECK(yt::wait_exit(child, 120s) == 75);
  for (const fs::path& f : {tmp / "out.txt", dir / "train.log", dir / "status.json", dir / "args.yaml"}) {
    INFO(f.string());
    CHECK(fs::exists(f));
    CHECK(yt::slurp(f).find(token) == std::string::npos);
  }
  CHECK_THAT(yt::slurp(dir / "args.yaml"), Catch::Contains((tmp / "token").string()));  // the file, not the token
}

TEST_CASE("a control port in use, an open address without a token, a missing token file: exit 2 at once",
          "[integration][control]") {
  yt::TempDir tmp;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // another program on the port
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(a);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  const std::string port = std::to_string(ntohs(a.sin_port));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"control=127.0.0.1:" + port}, "control=127.0.0.1:" + port + ": the port is in use"},
      {{"control=0.0.0.0:0"}, "give control_token_file=FILE"},
      {{"control=127.0.0.1:0", "control_token_file=" + (tmp / "absent").string()}, "no such file"},
      {{"control=127.0.0.1"}, "has no port"},
      {{"metrics_push=pushgateway:9091"}, "http://HOST:PORT"},
  };
  for (const auto& [extra, message] : cases) {
    const yt::Finished f = yt::run_to_end(train_args(tmp.path(), extra), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains(message));
    CHECK_THAT(f.output, !Catch::Contains("training "));
  }
  ::close(fd);
}

TEST_CASE("a real Prometheus scrapes the endpoint: the run's figures by name, its state and what a kill would cost",
          "[integration][control][prometheus]") {
  if (const auto why = yt::Prometheus::unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  auto [child, port] = start_controlled(tmp);
  // After the first epoch's validation, hold the run paused while Prometheus scrapes it.
  REQUIRE(yt::wait_until([&] { return status_figure(dir, "metrics/mAP50(B)").has_value(); }, 300s));
  REQUIRE(yt::http_request(port, "POST", "/v1/pause?wait=120").status == 200);
  const double map50 = *status_figure(dir, "metrics/mAP50(B)");
  yt::Prometheus prometheus("127.0.0.1:" + std::to_string(port));
  nlohmann::json got;
  const bool scraped = yt::wait_until(
      [&] { return !(got = prometheus.query("yolotrain_metric{name=\"metrics/mAP50(B)\"}")).empty(); }, 120s);
  INFO(prometheus.log());
  REQUIRE(scraped);
  CHECK(std::stod(got[0]["value"][1].get<std::string>()) == Approx(map50).margin(1e-12));
  CHECK(got[0]["metric"]["job"] == "yolotrain");
  CHECK(yt::wait_until([&] { return !prometheus.query("yolotrain_state{state=\"paused\"} == 1").empty(); }, 60s));
  CHECK(prometheus.target_health() == "up");
  // What a kill would cost, as scraped, is what status.json says: the time to a safe exit measured by
  // the run, no step at risk after the pause's checkpoint, and that checkpoint's age at the scrape.
  const auto status = yt::http_request(port, "GET", "/v1/status").json();
  const double safe_exit = status["exit_cost"]["safe_exit_seconds"];
  CHECK(safe_exit > 0);
  nlohmann::json exit_s, age, at_risk;
  REQUIRE(yt::wait_until([&] { return !(exit_s = prometheus.query("yolotrain_safe_exit_seconds")).empty(); }, 60s));
  CHECK(std::stod(exit_s[0]["value"][1].get<std::string>()) == Approx(safe_exit).margin(1e-12));
  REQUIRE(yt::wait_until([&] { return !(age = prometheus.query("yolotrain_checkpoint_age_seconds")).empty(); }, 60s));
  const double scraped_at = age[0]["value"][0].get<double>(), checkpoint_time = status["last_checkpoint"]["time"];
  CHECK(std::stod(age[0]["value"][1].get<std::string>()) == Approx(scraped_at - checkpoint_time).margin(1.5));
  REQUIRE(yt::wait_until([&] { return !(at_risk = prometheus.query("yolotrain_steps_at_risk")).empty(); }, 60s));
  CHECK(at_risk[0]["value"][1] == "0");
  CHECK(status["exit_cost"]["steps_at_risk"] == 0);
  REQUIRE(yt::http_request(port, "POST", "/v1/resume").status != 0);
  CHECK(yt::wait_exit(child, 300s) == 0);
}

TEST_CASE("a real Pushgateway gets the figures, killed and restarted mid-run, training goes on and pushes catch up",
          "[integration][control][prometheus]") {
  if (const auto why = yt::Pushgateway::unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Pushgateway gateway;
  yt::Child child = yt::spawn(
      train_args(tmp.path(), {"control=127.0.0.1:0", "metrics_push=" + gateway.url(), "metrics_push_interval=1"}),
      tmp / "out.txt");
  const int port = control_port(tmp / "out.txt");
  REQUIRE(port > 0);
  const std::string group = "instance=\"run\",job=\"yolotrain\"";
  REQUIRE(yt::wait_until([&] { return series_value(gateway.metrics(), "yolotrain_step", group).has_value(); }, 120s));

  REQUIRE(yt::http_request(port, "POST", "/v1/pause?wait=120").status == 200);
  gateway.kill();
  REQUIRE(yt::http_request(port, "POST", "/v1/resume?wait=120").status == 200);
  const std::int64_t at = yt::status_of(dir)["step"];
  REQUIRE(yt::wait_for_step(dir, at + 2));  // training goes on without the gateway
  gateway.restart();                        // empty: whatever it shows now was pushed after this
  auto r = yt::http_request(port, "POST", "/v1/pause?wait=120");
  REQUIRE(r.status == 200);
  const std::int64_t paused_at = r.json()["step"];
  CHECK(yt::wait_until(
      [&] {
        const std::string m = gateway.metrics();
        return series_value(m, "yolotrain_state", "state=\"paused\"") == 1.0 &&
               series_value(m, "yolotrain_step", group) == static_cast<double>(paused_at);
      },
      60s));
  REQUIRE(yt::http_request(port, "POST", "/v1/resume").status != 0);
  const auto code = yt::wait_exit(child, 300s);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("yolotrain: metrics_push: " + gateway.url()));  // the failure, said
  CHECK(series_value(gateway.metrics(), "yolotrain_state", "state=\"completed\"") == 1.0);  // the final push
}

TEST_CASE("Kubeflow Trainer's status endpoint gets the progress, time left and figures with the pod's token",
          "[integration][control][kubeflow]") {
  yt::TempDir tmp;
  // https, as the controller serves it, verified with the CA file the pod is given.
  const yt::PemPair tls = yt::self_signed_cert_for_loopback();
  yolotrain::lifecycle::atomic_write(tmp / "ca.crt", tls.cert);
  const std::string path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/yolo/status";
  const std::string token = "kf-token-" + std::to_string(::getpid());
  std::mutex m;
  std::vector<nlohmann::json> posts;
  int refused = 0, invalid = 0;
  // As kubeflow/trainer's pkg/statusserver: the bearer token checked, the payload validated (422).
  yt::FakeHttpServer server([&](const yt::FakeRequest& r) {
    std::lock_guard<std::mutex> lock(m);
    if (r.method != "POST" || r.path != path) return yt::FakeReply{404, "{}"};
    if (r.header("Authorization") != "Bearer " + token) {
      ++refused;
      return yt::FakeReply{403, R"({"kind":"Status","status":"Failure","reason":"Forbidden"})"};
    }
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    const auto& s = j.is_object() ? j.value("trainerStatus", nlohmann::json()) : nlohmann::json();
    bool ok = s.is_object() && s["progressPercentage"].is_number_integer() && s["progressPercentage"] >= 0 &&
              s["progressPercentage"] <= 100 && s["lastUpdatedTime"].is_string();
    for (const auto& metric : s.value("metrics", nlohmann::json::array())) {
      ok = ok && metric["name"].is_string() && metric["value"].is_string() &&
           metric["name"].get<std::string>().size() <= 64 && metric["value"].get<std::string>().size() <= 64;
    }
    if (!ok) {
      ++invalid;
      return yt::FakeReply{422, R"({"kind":"Status","status":"Failure","reason":"Invalid"})"};
    }
    posts.push_back(j);
    return yt::FakeReply{200, r.body};
  }, std::make_pair(tls.key, tls.cert));
  yolotrain::lifecycle::atomic_write(tmp / "token", token + "\n");
  yt::ScopedEnv env({{"KUBEFLOW_TRAINER_SERVER_URL", server.url() + path},
                     {"KUBEFLOW_TRAINER_SERVER_TOKEN", (tmp / "token").string()},
                     {"KUBEFLOW_TRAINER_SERVER_CA_CERT", (tmp / "ca.crt").string()}});
  const yt::Finished f = yt::run_to_end(train_args(tmp.path(), {"plots=false"}), tmp / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  CHECK_THAT(f.output, Catch::Contains("kubeflow: reporting progress to " + server.url() + path));
  {
    std::lock_guard<std::mutex> lock(m);
    CHECK(refused == 0);
    CHECK(invalid == 0);
    REQUIRE(posts.size() >= 2);  // at the start, at an epoch's end (5 s apart at least), at the end
    CHECK(posts.front()["trainerStatus"]["progressPercentage"] < 100);
    const auto& last = posts.back()["trainerStatus"];
    CHECK(last["progressPercentage"] == 100);
    CHECK(last["estimatedRemainingSeconds"] == 0);
    std::map<std::string, std::string> figures;
    for (const auto& metric : last["metrics"]) figures[metric["name"]] = metric["value"];
    CHECK(figures.count("metrics/mAP50(B)") == 1);
    CHECK(figures.count("train/box_loss") == 1);
  }

  // A token the server refuses: said once, and the run trains to its end all the same.
  yolotrain::lifecycle::atomic_write(tmp / "token", "expired\n");
  const yt::Finished refused_run =
      yt::run_to_end(train_args(tmp.path(), {"plots=false", "name=run2"}), tmp / "out2.txt");
  INFO(refused_run.output);
  CHECK(refused_run.code == 0);
  std::lock_guard<std::mutex> lock(m);
  CHECK(refused > 0);
  const std::string said = "kubeflow progress: " + server.url() + path + ": HTTP 403";
  const auto first = refused_run.output.find(said);
  CHECK(first != std::string::npos);
  CHECK(refused_run.output.find(said, first + 1) == std::string::npos);
}
