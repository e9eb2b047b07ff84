// Integration tests: real custom_loop processes, real signals, real files.
#include <ATen/ATen.h>

#include "custom_loop.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

#include "catch.hpp"
#include <nlohmann/json.hpp>
#include <signal.h>

#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "http_client.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

using yt::Finished;
using yt::in_state;
using yt::reached_step;
using yt::run_to_end;
using yt::status_of;

const std::vector<std::string> kBase = {"--steps", "150", "--seed", "3", "--batch", "16", "--threads", "1",
                                        "--save-interval-s", "0"};

std::vector<std::string> args(const fs::path& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {CUSTOM_LOOP_PATH, "--dir", dir.string()};
  a.insert(a.end(), kBase.begin(), kBase.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::string digest_of(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("weights-sha256: ([0-9a-f]{64})")) ? m[1].str() : "";
}

// The digest of an uninterrupted run with kBase plus `extra` (computed once per `extra`).
std::string baseline_digest(const std::vector<std::string>& extra = {}) {
  static std::map<std::vector<std::string>, std::string> cache;
  auto it = cache.find(extra);
  if (it != cache.end()) return it->second;
  yt::TempDir dir;
  const Finished f = run_to_end(args(dir / "run", extra), dir / "out.txt");
  INFO(f.output);
  REQUIRE(f.code == 0);
  const std::string d = digest_of(f.output);
  REQUIRE(d.size() == 64);
  return cache[extra] = d;
}

std::int64_t stopped_step(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("at step ([0-9]+)")) ? std::stoll(m[1].str()) : -1;
}

// Waits for a run that was interrupted and let go on: it must complete with the baseline digest.
void check_completes_identically(yt::Child& child, const fs::path& out_file) {
  const auto code = yt::wait_exit(child, 120s);
  const std::string out = yt::slurp(out_file);
  INFO(out);
  CHECK(code == 0);
  CHECK(digest_of(out) == baseline_digest());
}

// Sends `signo` once the run has made some progress, checks the graceful stop, then resumes.
void stop_and_resume(int signo, int expected_code) {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(args(dir, {"--hold-at-step", "20"}), tmp / "out1.txt");
  REQUIRE(yt::wait_until([&] { return reached_step(dir, 20); }, 60s));  // held there until the signal
  kill(child.pid, signo);
  const pid_t group = child.pid;
  const auto code = yt::wait_exit(child, 30s);
  const std::string out = yt::slurp(tmp / "out1.txt");
  INFO(out);
  CHECK(code == expected_code);
  CHECK_FALSE(yt::process_group_alive(group));  // nothing left behind
  const std::int64_t step = stopped_step(out);
  CHECK(step == 20);
  lc::CheckpointStore store({dir, 2, "", "ckpt", {}});
  const auto latest = store.load_latest();
  REQUIRE(latest.checkpoint);
  CHECK(latest.checkpoint->meta.step == step);  // the last completed step: zero steps lost
  CHECK(status_of(dir)["state"] == "stopped");

  const Finished resumed = run_to_end(args(dir), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step " + std::to_string(step)));
  CHECK(digest_of(resumed.output) == baseline_digest());
}

}  // namespace

TEST_CASE("an uninterrupted run is reproducible", "[integration]") {
  yt::TempDir tmp;
  const Finished f = run_to_end(args(tmp / "run"), tmp / "out.txt");
  CHECK(f.code == 0);
  CHECK(digest_of(f.output) == baseline_digest());
  CHECK(status_of(tmp / "run")["state"] == "completed");
  // Running again with the same folder resumes the finished run and changes nothing.
  const Finished again = run_to_end(args(tmp / "run"), tmp / "out2.txt");
  CHECK_THAT(again.output, Catch::Contains("resumed from step 150"));
  CHECK(digest_of(again.output) == baseline_digest());
}

TEST_CASE("SIGTERM stops with 143 and a checkpoint and the resumed run ends identical", "[integration]") {
  stop_and_resume(SIGTERM, 143);
}

TEST_CASE("SIGINT stops with 130 and a checkpoint and the resumed run ends identical", "[integration]") {
  stop_and_resume(SIGINT, 130);
}

TEST_CASE("SIGUSR1 pauses without using the CPU and SIGUSR2 resumes", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(args(dir, {"--hold-at-step", "10"}), tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return reached_step(dir, 10); }, 60s));  // held there until the signal
  kill(child.pid, SIGUSR1);
  REQUIRE(yt::wait_for_state(dir, "paused", 30s));
  const auto paused_at = status_of(dir)["step"].get<std::int64_t>();
  CHECK(status_of(dir)["last_checkpoint"]["step"] == paused_at);  // a pause saves first
  const double cpu_before = yt::cpu_seconds(child.pid);
  std::this_thread::sleep_for(500ms);
  CHECK(yt::cpu_seconds(child.pid) - cpu_before < 0.05);
  CHECK(status_of(dir)["step"] == paused_at);
  kill(child.pid, SIGUSR2);
  REQUIRE(yt::wait_until([&] { return in_state(dir, "running") || in_state(dir, "completed"); }, 30s));
  check_completes_identically(child, tmp / "out.txt");
  const auto requests = status_of(dir)["requests"].dump();
  CHECK_THAT(requests, Catch::Contains("pause") && Catch::Contains("resume"));
}

TEST_CASE("SIGHUP writes a checkpoint while training continues", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(args(dir, {"--hold-at-step", "10"}), tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return reached_step(dir, 10); }, 60s));  // held there until the signal
  CHECK(status_of(dir)["last_checkpoint"].is_null());
  kill(child.pid, SIGHUP);
  REQUIRE(yt::wait_until([&] { return !status_of(dir)["last_checkpoint"].is_null(); }, 30s));
  const auto saved_at = status_of(dir)["last_checkpoint"]["step"].get<std::int64_t>();
  CHECK(saved_at >= 10);
  CHECK(fs::exists(dir / ("ckpt-" + std::string(12 - std::to_string(saved_at).size(), '0') +
                          std::to_string(saved_at) + ".ytckpt")));
  check_completes_identically(child, tmp / "out.txt");
}

TEST_CASE("pause-release exit checkpoints and exits 75 and the rerun resumes", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(args(dir, {"--hold-at-step", "10", "--pause-release", "exit"}), tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return reached_step(dir, 10); }, 60s));  // held there until the signal
  kill(child.pid, SIGUSR1);
  const auto code = yt::wait_exit(child, 30s);
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  CHECK(code == 75);
  const std::int64_t step = stopped_step(out);
  const Finished resumed = run_to_end(args(dir, {"--pause-release", "exit"}), tmp / "out2.txt");
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step " + std::to_string(step)));
  CHECK(digest_of(resumed.output) == baseline_digest());
}

TEST_CASE("custom_loop --control: pause, checkpoint, resume and stop over HTTP as the signals, resumed identical",
          "[integration][control]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(args(dir, {"--hold-at-step", "10", "--control", "127.0.0.1:0"}), tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return reached_step(dir, 10); }, 60s));  // held there until a request
  std::smatch m;
  const std::string out = yt::slurp(tmp / "out.txt");
  REQUIRE(std::regex_search(out, m, std::regex("listening on http://127\\.0\\.0\\.1:([0-9]+)")));
  const int port = std::stoi(m[1].str());
  auto r = yt::http_request(port, "POST", "/v1/pause?wait=60");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(in_state(dir, "paused"));  // the answer comes once status.json says it
  const auto paused_at = status_of(dir)["step"].get<std::int64_t>();
  CHECK(status_of(dir)["last_checkpoint"]["step"] == paused_at);
  CHECK(yt::http_request(port, "POST", "/v1/resume?wait=60").status == 200);
  r = yt::http_request(port, "POST", "/v1/checkpoint?wait=60");
  CHECK(r.status == 200);
  CHECK(status_of(dir)["last_checkpoint"]["step"].get<std::int64_t>() > paused_at);
  r = yt::http_request(port, "POST", "/v1/stop?wait=60");
  CHECK(r.status == 200);
  CHECK(r.json()["state"] == "stopped");
  const auto code = yt::wait_exit(child, 60s);
  const std::string stopped = yt::slurp(tmp / "out.txt");
  INFO(stopped);
  CHECK(code == 75);
  REQUIRE(std::regex_search(stopped, m, std::regex("stopped by remote at step ([0-9]+)")));
  const Finished resumed = run_to_end(args(dir), tmp / "out2.txt");
  CHECK_THAT(resumed.output, Catch::Contains("resumed from step " + m[1].str()));
  CHECK(digest_of(resumed.output) == baseline_digest());
}

TEST_CASE("Ctrl+Z pauses and suspends and SIGCONT (fg) resumes", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(args(dir, {"--hold-at-step", "10"}), tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return reached_step(dir, 10); }, 60s));  // held there until the signal
  kill(child.pid, SIGTSTP);
  REQUIRE(yt::wait_until([&] { return yt::process_state(child.pid) == 'T'; }, 30s));  // stopped, as a shell's ^Z
  CHECK(in_state(dir, "paused"));
  kill(child.pid, SIGCONT);
  check_completes_identically(child, tmp / "out.txt");
}

TEST_CASE("bad command lines exit 2 with one clear line", "[integration]") {
  yt::TempDir tmp;
  lc::atomic_write(tmp / "afile", "x");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{CUSTOM_LOOP_PATH, "--dir", (tmp / "d").string(), "--steps", "5", "--bogus", "1"}, "unknown flag '--bogus'"},
      {{CUSTOM_LOOP_PATH, "--dir", (tmp / "d").string()}, "--steps is required"},
      {{CUSTOM_LOOP_PATH, "--steps", "5"}, "--dir is required"},
      {{CUSTOM_LOOP_PATH, "--dir", (tmp / "d").string(), "--steps", "x"}, "--steps needs an integer"},
      {{CUSTOM_LOOP_PATH, "--dir", (tmp / "afile").string(), "--steps", "5"}, "is a file, not a folder"},
      {{CUSTOM_LOOP_PATH, "--dir", (tmp / "d").string(), "--steps", "5", "--pause-release", "nap"},
       "--pause-release must be cache, offload or exit"},
  };
  for (const auto& [a, message] : cases) {
    const Finished f = run_to_end(a, tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains(message));
  }
}

TEST_CASE("unusable checkpoints stop the run and are left untouched", "[integration]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  fs::create_directories(dir);
  SECTION("a file from another program") {
    lc::atomic_write(dir / "ckpt-000000000005.ytckpt", "PK\x03\x04 a zip file");
    const Finished f = run_to_end(args(dir), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 1);
    CHECK_THAT(f.output, Catch::Contains("not a yolotrain checkpoint") && Catch::Contains("no usable checkpoint"));
    CHECK(yt::slurp(dir / "ckpt-000000000005.ytckpt") == "PK\x03\x04 a zip file");
  }
  SECTION("a checkpoint of another model") {
    REQUIRE(run_to_end(args(dir, {"--fc-width", "8"}), tmp / "out0.txt").code == 0);
    const std::string before = yt::slurp(dir / "ckpt-000000000150.ytckpt");
    const Finished f = run_to_end(args(dir), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 1);
    CHECK_THAT(f.output, Catch::Contains("written for model 'custom_loop/cnn-fc8'"));
    CHECK(yt::slurp(dir / "ckpt-000000000150.ytckpt") == before);
  }
  SECTION("a checkpoint of a newer format") {
    REQUIRE(run_to_end(args(dir), tmp / "out0.txt").code == 0);
    const fs::path ckpt = dir / "ckpt-000000000150.ytckpt";
    std::string bytes = yt::slurp(ckpt);
    bytes[8] = 9;  // format version 9
    lc::atomic_write(ckpt, bytes);
    const Finished f = run_to_end(args(dir), tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 1);
    CHECK_THAT(f.output, Catch::Contains("format version 9 is newer"));
    CHECK(yt::slurp(ckpt) == bytes);
  }
  SECTION("a checkpoint made with other arguments") {
    REQUIRE(run_to_end(args(dir), tmp / "out0.txt").code == 0);
    auto other = args(dir);
    other[other.size() - 5] = "32";  // --batch 32 instead of 16
    const Finished f = run_to_end(other, tmp / "out.txt");
    INFO(f.output);
    CHECK(f.code == 2);
    CHECK_THAT(f.output, Catch::Contains("rerun with the same arguments"));
  }
}

TEST_CASE("a folder that cannot be created or written is a runtime error", "[integration]") {
  yt::TempDir tmp;
  const Finished f = run_to_end({CUSTOM_LOOP_PATH, "--dir", "/proc/yolotrain-run", "--steps", "5"}, tmp / "out.txt");
  INFO(f.output);
  CHECK(f.code == 1);
  CHECK_THAT(f.output, Catch::Contains("/proc/yolotrain-run"));
}

TEST_CASE("stopped in-process runs leave no threads behind", "[integration]") {
  yt::TempDir tmp;
  auto stopped_run = [&](const std::string& name) {
    custom_loop::Options o;
    o.dir = tmp / name;
    o.steps = 1000000;
    o.threads = 2;
    o.save_every_steps = 2;
    o.quiet = true;
    lc::ControlToken token;
    std::thread stopper([&] {
      std::this_thread::sleep_for(300ms);
      token.request_stop();
    });
    std::ostringstream log;
    const custom_loop::Result r = custom_loop::train(o, token, log);
    stopper.join();
    CHECK(r.outcome == custom_loop::Outcome::Stopped);
    CHECK(r.step > 0);
  };
  stopped_run("first");  // libtorch's thread pool starts here and stays, as it should
  const int threads = yt::thread_count();
  stopped_run("second");
  CHECK(yt::thread_count() == threads);  // the checkpoint writer and everything else are gone
}

TEST_CASE("SIGKILL at random moments (also inside checkpoint writes) never costs the result",
          "[chaos]") {
  const std::vector<std::string> big = {"--fc-width", "4096", "--save-every-steps", "3"};
  const std::string expected = baseline_digest(big);
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  std::mt19937 rng(12345);
  int aimed_hits = 0;
  for (int trial = 0; trial < 20; ++trial) {
    CAPTURE(trial);
    yt::Child child = yt::spawn(args(dir, big), tmp / "out.txt");
    const bool aim_at_write = trial % 2 == 1;
    if (aim_at_write) {
      // Kill while a temporary checkpoint file exists: mid-write.
      const bool hit = yt::wait_until(
          [&] {
            std::error_code ec;
            for (const auto& e : fs::directory_iterator(dir, ec)) {
              if (lc::is_temporary_name(e.path().filename().string())) return true;
            }
            return false;
          },
          20s, 0ms);
      aimed_hits += hit;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 1500)(rng)));
    }
    kill(child.pid, SIGKILL);
    yt::wait_exit(child, 30s);
    if (!fs::exists(dir)) continue;
    lc::CheckpointStore store({dir, 2, "", "ckpt", {}});
    const auto latest = store.load_latest();
    INFO(yt::slurp(tmp / "out.txt"));
    CHECK(latest.skipped.empty());  // nothing torn, ever
  }
  CHECK(aimed_hits >= 5);
  const Finished final_run = run_to_end(args(dir, big), tmp / "final.txt");
  INFO(final_run.output);
  CHECK(final_run.code == 0);
  CHECK(digest_of(final_run.output) == expected);
}
