// One run across two "hosts" — two network namespaces joined by a veth pair, made by the test, their
// addresses reachable only inside them — launched by torchrun on each with its c10d rendezvous, as
// on two machines: the control endpoint and the signals act on both, a whole host lost ends the
// other with exit 69 naming it, and the run is requeued on one host and then on two, each time
// resuming from the step it stopped at and, at last, finishing.
#include <ATen/ATen.h>

#include "yolotrain/lifecycle/files/atomic_file.hpp"

#include "catch.hpp"

#include <signal.h>

#include <thread>

#include "fake_metadata_server.hpp"
#include "http_client.hpp"
#include "test_support.hpp"
#include "tiny_shapes.hpp"
#include "train_runs.hpp"
#include "two_hosts.hpp"

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

constexpr int kControlPort = 18200;  // each host's own network: no other program there
constexpr int kRendezvousPort = 29400;

std::vector<std::string> run_args(const fs::path& project, const fs::path& token, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {YOLO_TRAIN_PATH, "data=" + yt::tiny_shapes_dataset().string(), "epochs=10",
                                "imgsz=64", "batch=4", "workers=1", "threads=1", "project=" + project.string(),
                                "name=run", "save_interval=0", "verbose=false", "plots=false", "dist_timeout=20",
                                "status_interval=0.01", "control=0.0.0.0:" + std::to_string(kControlPort),
                                "control_token_file=" + token.string(), "control_per_rank=true"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// torchrun on `host` of `nodes`, one rank each, meeting at host 0's c10d rendezvous.
std::vector<std::string> torchrun_on(const yt::TwoHosts& hosts, int nodes, std::vector<std::string> run) {
  std::vector<std::string> cmd = {YOLOTRAIN_TORCHRUN, "--nnodes=" + std::to_string(nodes), "--nproc_per_node=1",
                                  "--rdzv_backend=c10d",
                                  "--rdzv_endpoint=" + hosts.address(0) + ":" + std::to_string(kRendezvousPort),
                                  "--rdzv_id=yolotrain-hosts", "--monitor_interval=0.2", "--no_python"};
  cmd.insert(cmd.end(), run.begin(), run.end());
  return cmd;
}

// Why these tests cannot run here (no network namespaces, no torchrun), or nothing.
std::optional<std::string> why_no_hosts() {
  if (const auto why = yt::TwoHosts::unavailable()) return "skipped: " + *why;
  return yt::torchrun_missing();
}

std::int64_t last_checkpoint_step(const fs::path& run) { return yt::status_of(run)["last_checkpoint"]["step"]; }

}  // namespace

TEST_CASE("two hosts: torchrun's c10d rendezvous, HTTP and signals act on both, a lost host ends the other with 69, "
          "the run resumes on one host, then on two",
          "[integration][hosts]") {
  if (const auto why = why_no_hosts()) {
    WARN(*why);
    return;
  }
  yt::TempDir tmp;
  const fs::path run = tmp / "run";  // one folder both hosts see, as a shared volume
  const std::string token = "hosts-token-" + std::to_string(::getpid());
  yolotrain::lifecycle::atomic_write(tmp / "token", token + "\n");
  yt::TwoHosts hosts;
  auto on = [&](int host, int nodes, std::vector<std::string> extra, const std::string& out) {
    return yt::spawn(hosts.command(host, torchrun_on(hosts, nodes, run_args(tmp.path(), tmp / "token", extra))),
                     tmp / out);
  };
  auto both = [&](const std::string& a, const std::string& b) {
    return yt::slurp(tmp / a) + "\n----- host b -----\n" + yt::slurp(tmp / b);
  };

  // 1. One run over both hosts; a pause sent to host b's rank pauses both at one step.
  yt::Child a = on(0, 2, {}, "a1.txt"), b = on(1, 2, {}, "b1.txt");
  if (!yt::wait_for_step(run, 2, 180s)) FAIL("no step 2 in 180 s:\n" << both("a1.txt", "b1.txt"));
  auto r = hosts.in(1, [&] {
    return yt::http_request(kControlPort, "POST", "/v1/pause?wait=120", token, 150s, hosts.address(1));
  });
  INFO(r.body << both("a1.txt", "b1.txt"));
  REQUIRE(r.status == 200);
  CHECK(r.json()["state"] == "paused");
  REQUIRE(yt::wait_for_state(run, "paused", 60s));  // rank 0, on host a
  CHECK(yt::status_of(run)["step"] == r.json()["step"]);
  // Host a's endpoint (rank 0) says the same, from host a's network.
  r = hosts.in(0, [&] { return yt::http_request(kControlPort, "GET", "/v1/status", token, 10s, hosts.address(0)); });
  CHECK(r.json()["state"] == "paused");
  // 2. A signal to host a's rank resumes both.
  const std::int64_t paused_at = yt::status_of(run)["step"];
  ::kill(static_cast<pid_t>(yt::status_of(run)["pid"].get<long>()), SIGUSR2);
  REQUIRE(yt::wait_for_step(run, paused_at + 1, 60s));
  // 3. Host b is lost: every process in it SIGKILLed. Host a's rank exits 69 naming rank 1.
  hosts.kill_all(1);
  yt::wait_exit(b, 10s);
  REQUIRE(yt::wait_until([&] { return yt::slurp(tmp / "a1.txt").find("exitcode: 69") != std::string::npos; }, 60s));
  CHECK_THAT(yt::slurp(tmp / "a1.txt"), Catch::Contains("Missing: rank(s) 1"));
  CHECK(yt::status_of(run)["state"] == "failed");
  hosts.kill_all(0);  // torchrun's agent would wait for host b at its exit barrier (torch's 300 s)
  yt::wait_exit(a, 10s);

  // 4. Requeued on host a alone; stopped there (SIGTERM) a few steps on.
  const std::int64_t saved = last_checkpoint_step(run);
  yt::Child one = on(0, 1, {"resume=true"}, "a2.txt");
  REQUIRE(yt::wait_for_step(run, saved + 2, 180s));
  ::kill(static_cast<pid_t>(yt::status_of(run)["pid"].get<long>()), SIGTERM);
  REQUIRE(yt::wait_for_state(run, "stopped", 60s));
  yt::wait_exit(one, 60s);
  const std::string a2 = yt::slurp(tmp / "a2.txt");
  INFO(a2);
  CHECK_THAT(a2, Catch::Contains("resumed from step " + std::to_string(saved)));
  const std::int64_t stopped_at = yt::status_of(run)["step"];
  CHECK(last_checkpoint_step(run) == stopped_at);

  // 5. Requeued on both hosts: it resumes there and finishes.
  yt::Child a3 = on(0, 2, {"resume=true"}, "a3.txt"), b3 = on(1, 2, {"resume=true"}, "b3.txt");
  const auto code_a = yt::wait_exit(a3, 300s), code_b = yt::wait_exit(b3, 60s);
  INFO(both("a3.txt", "b3.txt"));
  CHECK(code_a == 0);
  CHECK(code_b == 0);
  CHECK_THAT(yt::slurp(tmp / "a3.txt"), Catch::Contains("resumed from step " + std::to_string(stopped_at)));
  CHECK(yt::status_of(run)["state"] == "completed");
  const std::string csv = yt::slurp(run / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 11);  // the header and 10 epochs
}

// Preemption on two machines: each host its own (fake) AWS metadata server on its own loopback, as
// each cloud machine has its own; host b's notice stops both ranks at one step (exit 75 on each,
// the checkpoint of that step), and the run resumed on both ends as an uninterrupted one.
TEST_CASE("two hosts: one host's preemption notice stops both ranks at one step (75), resumed identical",
          "[integration][hosts][preemption]") {
  if (const auto why = why_no_hosts()) {
    WARN(*why);
    return;
  }
  yt::TempDir tmp;
  yt::TwoHosts hosts;
  std::shared_ptr<yt::FakeMetadataServer> meta[2];
  for (int h = 0; h < 2; ++h) meta[h] = hosts.in(h, [] { return std::make_shared<yt::FakeMetadataServer>(); });
  const std::vector<std::string> drill = {"epochs=12", "preemption=aws", "preemption_interval=0.2"};
  auto on = [&](int host, const fs::path& project, std::vector<std::string> extra, const std::string& out) {
    extra.insert(extra.begin(), drill.begin(), drill.end());
    std::vector<std::string> cmd = {"env", "-u", "AWS_EC2_METADATA_DISABLED",
                                    "AWS_EC2_METADATA_SERVICE_ENDPOINT=" + meta[host]->url()};
    const auto run = torchrun_on(hosts, 2, run_args(project, tmp / "token", extra));
    cmd.insert(cmd.end(), run.begin(), run.end());
    return yt::spawn(hosts.command(host, cmd), tmp / out);
  };
  yolotrain::lifecycle::atomic_write(tmp / "token", "hosts-token\n");
  const fs::path run = tmp / "drill" / "run";
  yt::Child a = on(0, tmp / "drill", {}, "a1.txt"), b = on(1, tmp / "drill", {}, "b1.txt");
  if (!yt::wait_for_step(run, 3, 180s)) FAIL("no step 3:\n" << yt::slurp(tmp / "a1.txt") << yt::slurp(tmp / "b1.txt"));
  const auto deadline = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now()) + 6s;
  const std::time_t t = std::chrono::system_clock::to_time_t(deadline);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[40];
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  meta[1]->set_aws_notice("terminate", when);  // host b's machine is taken back; host a has no notice
  yt::wait_exit(a, 120s);
  yt::wait_exit(b, 60s);
  const std::string a1 = yt::slurp(tmp / "a1.txt"), b1 = yt::slurp(tmp / "b1.txt");
  INFO(a1 << "\n----- host b -----\n" << b1);
  CHECK_THAT(a1, Catch::Contains("exitcode: 75"));  // each host's rank, as its torchrun reports it
  CHECK_THAT(b1, Catch::Contains("exitcode: 75"));
  CHECK_THAT(b1, Catch::Contains("rank 1: preemption: aws: spot/instance-action terminate"));
  CHECK(a1.find("preemption: aws: spot") == std::string::npos);  // host a's machine had no notice
  CHECK_THAT(a1, Catch::Contains("stopped (preemption)"));       // and stopped for host b's
  CHECK(meta[0]->count("GET /latest/meta-data/spot/instance-action") > 0);  // each asked its own server
  CHECK(meta[1]->count("GET /latest/meta-data/spot/instance-action") > 0);
  const auto status = yt::status_of(run);
  CHECK(status["state"] == "stopped");
  const std::int64_t stopped_at = status["step"];
  CHECK(status["last_checkpoint"]["step"] == stopped_at);
  meta[1]->set_aws_notice("", "");  // the next machine has no notice
  // Resumed on both hosts, then (one job at a time: one rendezvous port) an uninterrupted run.
  yt::Child a2 = on(0, tmp / "drill", {"resume=true"}, "a2.txt"), b2 = on(1, tmp / "drill", {"resume=true"}, "b2.txt");
  CHECK(yt::wait_exit(a2, 300s) == 0);
  CHECK(yt::wait_exit(b2, 60s) == 0);
  yt::Child a3 = on(0, tmp / "straight", {}, "a3.txt"), b3 = on(1, tmp / "straight", {}, "b3.txt");
  CHECK(yt::wait_exit(a3, 300s) == 0);
  CHECK(yt::wait_exit(b3, 60s) == 0);
  INFO(yt::slurp(tmp / "a2.txt") << yt::slurp(tmp / "a3.txt"));
  CHECK_THAT(yt::slurp(tmp / "a2.txt"), Catch::Contains("resumed from step " + std::to_string(stopped_at)));
  CHECK(yt::weights_of(run) == yt::weights_of(tmp / "straight" / "run"));
}
