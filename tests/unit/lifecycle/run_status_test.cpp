#include "yolotrain/lifecycle/status/run_status.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>

#include <sstream>
#include <thread>
#include <unistd.h>

#include "test_support.hpp"

namespace lc = yolotrain::lifecycle;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {
json read_status(const std::filesystem::path& p) { return json::parse(yolotrain::test::slurp(p)); }
std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("status.json is rewritten on every state change", "[lifecycle]") {
  yolotrain::test::TempDir dir;
  lc::RunStatus status(dir / "status.json", 1h);
  status.set_state(lc::RunState::Running);
  CHECK(read_status(dir / "status.json")["state"] == "running");
  status.set_state(lc::RunState::Paused);
  const json j = read_status(dir / "status.json");
  CHECK(j["state"] == "paused");
  CHECK(j["pid"] == static_cast<long>(getpid()));
  CHECK(j["memory"]["rss_bytes"].get<std::int64_t>() > 0);
  CHECK(j["last_checkpoint"].is_null());
  CHECK(j["error"].is_null());
}

TEST_CASE("progress is written at most once per interval", "[lifecycle]") {
  yolotrain::test::TempDir dir;
  lc::RunStatus status(dir / "status.json", 200ms);
  status.set_state(lc::RunState::Running);
  status.set_progress(5, 0);
  CHECK(read_status(dir / "status.json")["step"] == 0);  // too soon after the state change
  std::this_thread::sleep_for(210ms);
  status.set_metric("loss", 1.5);
  status.set_throughput(12.5, "steps/s");
  status.set_progress(6, 1);
  const json j = read_status(dir / "status.json");
  CHECK(j["step"] == 6);
  CHECK(j["epoch"] == 1);
  CHECK(j["metrics"]["loss"] == 1.5);
  CHECK(j["throughput"]["unit"] == "steps/s");
}

TEST_CASE("checkpoints and requests and errors are recorded at once", "[lifecycle]") {
  yolotrain::test::TempDir dir;
  lc::RunStatus status(dir / "status.json", 1h);
  status.set_checkpoint("/runs/x/ckpt-1.ytckpt", 1, 1700000000.5);
  status.note_request("SIGUSR1: pause");
  status.set_error("checkpoint write failed: disk full");
  const json j = read_status(dir / "status.json");
  CHECK(j["last_checkpoint"]["path"] == "/runs/x/ckpt-1.ytckpt");
  CHECK(j["last_checkpoint"]["step"] == 1);
  CHECK(j["requests"][0]["request"] == "SIGUSR1: pause");
  CHECK(j["error"] == "checkpoint write failed: disk full");
}

TEST_CASE("a status that cannot be written never stops the run", "[lifecycle]") {
  lc::RunStatus status("/nonexistent-folder/status.json", 1h);
  CHECK_NOTHROW(status.set_state(lc::RunState::Running));
  CHECK_THAT(status.last_error().value(), Catch::Contains("/nonexistent-folder/status.json"));
}

TEST_CASE("the Prometheus textfile carries state and progress and checkpoint time and losses", "[lifecycle]") {
  yolotrain::test::TempDir dir;
  lc::RunStatus status(dir / "status.json", 1h);
  status.set_textfile(dir / "yolotrain.prom", "my\"run");
  status.set_progress(7, 1);
  status.set_throughput(12.5, "images/s");
  status.set_metric("train/box_loss", 1.25);
  status.set_metric("metrics/mAP50(B)", 0.5);
  status.set_checkpoint(dir / "last.ytckpt", 7, 1700000000.5);
  lc::RemoteUploadStatus remote;
  remote.url = "s3://b/p";
  remote.last_uploaded_step = 5;
  remote.pending = 1;
  remote.retries = 3;
  remote.last_error = "S3 PUT s3://b/p/weights/last-000000000007.ytckpt at http://x: HTTP 503 SlowDown";
  status.set_remote(remote);
  status.set_state(lc::RunState::Paused);
  const auto json = read_status(dir / "status.json");
  CHECK(json["remote"]["url"] == "s3://b/p");
  CHECK(json["remote"]["last_uploaded_step"] == 5);
  CHECK(json["remote"]["pending"] == 1);
  CHECK_THAT(json["remote"]["last_error"].get<std::string>(), Catch::Contains("SlowDown"));
  const std::string text = yolotrain::test::slurp(dir / "yolotrain.prom");
  CHECK_THAT(text, Catch::Contains("yolotrain_remote_last_uploaded_step{run=\"my\\\"run\"} 5\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_remote_pending_uploads{run=\"my\\\"run\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_remote_error{run=\"my\\\"run\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE yolotrain_state gauge"));
  CHECK_THAT(text, Catch::Contains("yolotrain_state{run=\"my\\\"run\",state=\"paused\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_state{run=\"my\\\"run\",state=\"running\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_step{run=\"my\\\"run\"} 7\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_epoch{run=\"my\\\"run\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_last_checkpoint_timestamp_seconds{run=\"my\\\"run\"} 1700000000.5\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_images_per_second{run=\"my\\\"run\"} 12.5\n"));
  // The figures keep their own names, as a label of one family (declared once).
  CHECK_THAT(text, Catch::Contains("yolotrain_metric{run=\"my\\\"run\",name=\"train/box_loss\"} 1.25\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_metric{run=\"my\\\"run\",name=\"metrics/mAP50(B)\"} 0.5\n"));
  CHECK(count_of(text, "# TYPE yolotrain_metric gauge") == 1);
  CHECK_THAT(text, Catch::Contains("yolotrain_last_progress_timestamp_seconds{"));
  CHECK_THAT(text, Catch::Contains("yolotrain_resident_memory_bytes{"));
  // Every sample line is "name{labels} number".
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    CAPTURE(line);
    const auto space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    CHECK(line[space - 1] == '}');
    CHECK_NOTHROW(std::stod(line.substr(space + 1)));
  }
}

TEST_CASE("the last progress time moves only when the step advances", "[lifecycle]") {
  yolotrain::test::TempDir dir;
  lc::RunStatus status(dir / "status.json", 0ms);
  status.set_progress(1, 0);
  const double first = read_status(dir / "status.json")["progressed"];
  std::this_thread::sleep_for(20ms);
  status.set_progress(1, 0);
  CHECK(read_status(dir / "status.json")["progressed"] == first);
  status.set_progress(2, 0);
  CHECK(read_status(dir / "status.json")["progressed"].get<double>() > first);
}

TEST_CASE("run status: what a kill would cost and a reclaim notice, in status.json and the Prometheus text",
          "[lifecycle][status]") {
  yolotrain::test::TempDir tmp;
  lc::RunStatus status(tmp / "status.json", 0ms);
  status.set_progress(10, 0);
  json j = json::parse(status.json());
  CHECK(j["exit_cost"]["steps_at_risk"] == 10);  // no checkpoint yet: everything since the start
  CHECK(j["exit_cost"]["safe_exit_seconds"].is_null());
  CHECK(j["notice"].is_null());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  status.set_checkpoint(tmp / "ckpt-8.ytckpt", 8, now - 30);
  status.set_safe_exit(1.25);
  j = json::parse(status.json());
  CHECK(j["exit_cost"]["steps_at_risk"] == 2);
  CHECK(j["exit_cost"]["safe_exit_seconds"] == 1.25);
  CHECK(j["exit_cost"]["checkpoint_age_seconds"].get<double>() == Approx(30).margin(2));
  const std::string text = status.prometheus();
  CHECK_THAT(text, Catch::Contains("yolotrain_safe_exit_seconds{run=\"" + tmp.path().string() + "\"} 1.25\n"));
  CHECK_THAT(text, Catch::Contains("yolotrain_steps_at_risk{run=\"" + tmp.path().string() + "\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE yolotrain_checkpoint_age_seconds gauge"));
  CHECK(text.find("yolotrain_notice_deadline_timestamp_seconds") == std::string::npos);
  status.set_notice({"aws", "spot/instance-action terminate", "reclaim", now, now + 120, now + 100});
  j = json::parse(yolotrain::test::slurp(tmp / "status.json"));  // set_notice writes at once
  CHECK(j["notice"]["source"] == "aws");
  CHECK(j["notice"]["kind"] == "reclaim");
  CHECK(j["notice"]["deadline"].get<double>() == now + 120);
  CHECK(j["notice"]["planned_stop"].get<double>() == now + 100);
  CHECK_THAT(status.prometheus(), Catch::Contains("yolotrain_notice_deadline_timestamp_seconds{run=\"" +
                                                  tmp.path().string() + "\",source=\"aws\",kind=\"reclaim\"}"));
  status.set_notice(
      {"gcp", "instance/maintenance-event TERMINATE_ON_HOST_MAINTENANCE", "maintenance", now, now + 60, 0});
  j = json::parse(status.json());
  CHECK(j["notice"]["planned_stop"].is_null());  // the run finishes first
  CHECK(status.prometheus().find("yolotrain_notice_planned_stop_timestamp_seconds") == std::string::npos);
}
