// Real processes on 127.0.0.1: two dist_test_workers per test (see dist_test_worker.cpp).
#include <ATen/ATen.h>

#include "catch.hpp"

#include <signal.h>

#include <regex>
#include <thread>

#include "dist_test_support.hpp"
#include "yolotrain/dist/process_group.hpp"

namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

/// The step in the worker's "STOP rank R step N ..." line, or -1.
int stop_step(const std::string& output) {
  std::smatch m;
  static const std::regex re("STOP rank \\d+ step (\\d+) signal (\\d+) token (\\d+)");
  return std::regex_search(output, m, re) ? std::stoi(m[1]) : -1;
}

/// The worker's "CollectiveError after N ms" (time from its first agree_max to the error), or -1.
int error_after_ms(const std::string& output) {
  std::smatch m;
  static const std::regex re("CollectiveError after (\\d+) ms");
  return std::regex_search(output, m, re) ? std::stoi(m[1]) : -1;
}

bool all_ready(const std::vector<yt::Child>& children) {
  for (const auto& c : children)
    if (yt::slurp(c.out).find("READY") == std::string::npos) return false;
  return true;
}

}  // namespace

TEST_CASE("process group: two ranks broadcast - average gradients - agree on requests", "[dist]") {
  yt::TempDir tmp;
  auto children = yt::start_workers("collectives", 2, tmp.path());
  for (int r = 0; r < 2; ++r) {
    const auto code = yt::wait_exit(children[r], 30s);
    const std::string out = yt::slurp(children[r].out);
    INFO(out);
    CHECK(code == 0);
    CHECK_THAT(out, Catch::Contains("OK rank " + std::to_string(r)));
  }
}

TEST_CASE("process group: a SIGKILLed rank is named by the survivor at once", "[dist]") {
  yt::TempDir tmp;
  auto children = yt::start_workers("die", 2, tmp.path());
  const auto code = yt::wait_exit(children[0], 20s);
  const std::string out = yt::slurp(children[0].out);
  INFO(out);
  CHECK(code == 7);
  CHECK_THAT(out, Catch::Contains("Missing: rank(s) 1: rank 1 is gone or stopped answering"));
  CHECK_THAT(out, Catch::Contains("missing: 1\n"));
  CHECK(error_after_ms(out) >= 0);
  CHECK(error_after_ms(out) < 3000);  // before the 3 s timeout: the closed connection tells
  CHECK(yt::wait_exit(children[1], 5s) == 128 + SIGKILL);
}

TEST_CASE("process group: when rank 0 dies with the store it serves the others say so", "[dist]") {
  yt::TempDir tmp;
  auto children = yt::start_workers("die0", 2, tmp.path());
  const auto code = yt::wait_exit(children[1], 20s);
  const std::string out = yt::slurp(children[1].out);
  INFO(out);
  CHECK(code == 7);
  CHECK_THAT(out, Catch::Contains("rank 0"));
  CHECK_THAT(out, Catch::Contains("missing: 0\n"));
  CHECK(yt::wait_exit(children[0], 5s) == 128 + SIGKILL);
}

TEST_CASE("process group: a rank that stops answering is detected by the timeout", "[dist]") {
  yt::TempDir tmp;
  auto children = yt::start_workers("stall", 2, tmp.path());
  const auto code = yt::wait_exit(children[0], 20s);
  const std::string out = yt::slurp(children[0].out);
  INFO(out);
  CHECK(code == 7);
  CHECK_THAT(out, Catch::Contains("rank 1 is gone or stopped answering"));
  CHECK(error_after_ms(out) >= 2900);  // the timeout (3 s, after the victim's 200 ms)...
  CHECK(error_after_ms(out) < 6000);   // ... plus the diagnosis, never "forever"
  yt::wait_exit(children[1], 10ms);  // it is stopped: killed and reaped
}

TEST_CASE("process group: SIGTERM to one rank stops every rank at the same step", "[dist]") {
  yt::TempDir tmp;
  auto children = yt::start_workers("signals", 2, tmp.path());
  REQUIRE(yt::wait_until([&] { return all_ready(children); }, 20s));
  std::this_thread::sleep_for(100ms);
  kill(children[1].pid, SIGTERM);
  int steps[2];
  for (int r = 0; r < 2; ++r) {
    const auto code = yt::wait_exit(children[r], 10s);
    const std::string out = yt::slurp(children[r].out);
    INFO(out);
    CHECK(code == 128 + SIGTERM);
    CHECK_THAT(out, Catch::Contains("signal 15 token 15"));
    steps[r] = stop_step(out);
  }
  CHECK(steps[0] >= 0);
  CHECK(steps[0] == steps[1]);
}

TEST_CASE("process group: a terminal Ctrl+C forwarded by torchrun is one graceful stop", "[dist]") {
  yt::TempDir tmp;
  auto children = yt::start_workers("signals", 2, tmp.path());
  REQUIRE(yt::wait_until([&] { return all_ready(children); }, 20s));
  std::this_thread::sleep_for(100ms);
  for (auto& c : children) kill(c.pid, SIGINT);  // the terminal's Ctrl+C reaches every worker
  std::this_thread::sleep_for(10ms);
  for (auto& c : children) kill(c.pid, SIGINT);  // torchrun forwards it ~10 ms later
  int steps[2];
  for (int r = 0; r < 2; ++r) {
    const auto code = yt::wait_exit(children[r], 10s);
    const std::string out = yt::slurp(children[r].out);
    INFO(out);
    CHECK(code == 128 + SIGINT);
    steps[r] = stop_step(out);  // a forced exit would print no STOP line
  }
  CHECK(steps[0] >= 0);
  CHECK(steps[0] == steps[1]);
}
