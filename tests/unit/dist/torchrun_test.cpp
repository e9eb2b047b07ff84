// scripts/torchrun: Debian's torchrun (torch 1.13, Python 3.11) with its start-up crash worked
// around, and the same command line as a current torchrun.
#include "catch.hpp"

#include <signal.h>

#include <cstdlib>
#include <regex>
#include <thread>

#include "dist_test_support.hpp"

namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("torchrun: collectives through torchrun's store - dashed option spellings", "[dist]") {
  if (const auto missing = yt::torchrun_missing()) {
    WARN(*missing);
    return;
  }
  yt::TempDir tmp;
  // Torch 1.13 knows only --nproc_per_node, --master_port, --no_python: the launcher translates.
  const auto r = yt::run_to_end({YOLOTRAIN_TORCHRUN, "--nproc-per-node=2", "--master-port",
                                 std::to_string(yt::free_port()), "--monitor-interval=0.2", "--no-python",
                                 DIST_TEST_WORKER, "collectives"},
                                tmp / "out.txt", 60s);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("OK rank 0"));
  CHECK_THAT(r.output, Catch::Contains("OK rank 1"));
  CHECK(count(r.output, "(torchrun's), attempt 0") == 2);  // torchrun's environment and store
}

TEST_CASE("torchrun: SIGTERM to torchrun stops both workers at the same step", "[dist]") {
  if (const auto missing = yt::torchrun_missing()) {
    WARN(*missing);
    return;
  }
  yt::TempDir tmp;
  yt::Child child = yt::spawn({YOLOTRAIN_TORCHRUN, "--nproc_per_node=2",
                               "--master_port=" + std::to_string(yt::free_port()), "--monitor_interval=0.2",
                               "--no_python", DIST_TEST_WORKER, "signals"},
                              tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return count(yt::slurp(child.out), "READY") == 2; }, 60s));
  std::this_thread::sleep_for(100ms);
  const pid_t group = child.pid;  // wait_exit() forgets it
  kill(child.pid, SIGTERM);
  const auto code = yt::wait_exit(child, 30s);
  const std::string out = yt::slurp(child.out);
  INFO(out);
  CHECK(code);  // torchrun itself reports the workers' failure exit; what matters is below
  const std::regex stop_line("STOP rank \\d step (\\d+) signal 15");
  std::vector<int> steps;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), stop_line);
       it != std::sregex_iterator(); ++it)
    steps.push_back(std::stoi((*it)[1]));
  REQUIRE(steps.size() == 2);
  CHECK(steps[0] == steps[1]);
  const bool gone = yt::wait_until([&] { return !yt::process_group_alive(group); }, 5s);
  CHECK(gone);  // no worker left behind
}
