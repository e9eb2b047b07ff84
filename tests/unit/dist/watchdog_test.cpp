#include "yolotrain/dist/watchdog.hpp"

#include "catch.hpp"

#include <mutex>
#include <thread>

#include "dist_test_support.hpp"

using namespace std::chrono_literals;
using yolotrain::dist::kWatchdogExitCode;
using yolotrain::dist::Watchdog;

TEST_CASE("watchdog: an operation that ends in time is forgotten", "[dist]") {
  std::mutex m;
  std::vector<std::string> messages;
  Watchdog dog(50ms, [&](const std::string& s) { std::lock_guard<std::mutex> l(m); messages.push_back(s); });
  for (int i = 0; i < 3; ++i) {
    auto scope = dog.watch("quick #" + std::to_string(i), 100ms);
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(250ms);
  CHECK(dog.expired() == 0);
  CHECK(messages.empty());
}

TEST_CASE("watchdog: an operation blocked past timeout and grace is reported once", "[dist]") {
  std::mutex m;
  std::vector<std::string> messages;
  Watchdog dog(
      50ms, [&](const std::string& s) { std::lock_guard<std::mutex> l(m); messages.push_back(s); },
      [] { return std::string("Missing: rank(s) 1"); });
  {
    auto scope = dog.watch("allreduce #7 (agree_max)", 100ms);
    std::this_thread::sleep_for(400ms);
  }
  REQUIRE(dog.expired() == 1);
  std::lock_guard<std::mutex> l(m);
  REQUIRE(messages.size() == 1);
  CHECK_THAT(messages[0], Catch::Contains("allreduce #7 (agree_max) is still blocked after"));
  CHECK_THAT(messages[0], Catch::Contains("Missing: rank(s) 1"));
}

TEST_CASE("watchdog: by default it ends the process with its own exit code", "[dist]") {
  yolotrain::test::TempDir tmp;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = yolotrain::test::run_to_end({DIST_TEST_WORKER, "watchdog"}, tmp / "out.txt", 8s);
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  REQUIRE(r.code);
  CHECK(*r.code == kWatchdogExitCode);
  CHECK_THAT(r.output, Catch::Contains("fake collective #1 is still blocked after"));
  CHECK_THAT(r.output, Catch::Contains("diagnosis here"));
  CHECK_THAT(r.output, Catch::Contains("Exiting with code 69"));
}
