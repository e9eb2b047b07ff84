#include "yolotrain/lifecycle/control/control_token.hpp"

#include "catch.hpp"
#include <sys/resource.h>

#include <csignal>
#include <thread>

using namespace std::chrono_literals;
using yolotrain::lifecycle::ControlToken;
using yolotrain::lifecycle::StopReason;

namespace {
double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
}  // namespace

TEST_CASE("a new token asks for nothing", "[lifecycle]") {
  ControlToken token;
  CHECK_FALSE(token.stop_requested());
  CHECK_FALSE(token.pause_requested());
  CHECK_FALSE(token.checkpoint_requested());
  CHECK_FALSE(token.force_requested());
  CHECK(token.stop_reason() == StopReason::None);
  CHECK(token.stop_time_ns() == 0);
}

TEST_CASE("the first stop request wins and keeps its reason and time", "[lifecycle]") {
  ControlToken token;
  token.request_stop(StopReason::Signal, SIGTERM);
  const auto first_time = token.stop_time_ns();
  token.request_stop(StopReason::Deadline);
  CHECK(token.stop_requested());
  CHECK(token.stop_reason() == StopReason::Signal);
  CHECK(token.stop_signal() == SIGTERM);
  CHECK(token.stop_description() == "SIGTERM");
  CHECK(token.stop_time_ns() == first_time);
  CHECK(first_time > 0);
  CHECK_FALSE(token.force_requested());
  token.request_stop(StopReason::Api, 0, true);
  CHECK(token.force_requested());
}

TEST_CASE("stop reasons other than signals are described", "[lifecycle]") {
  ControlToken token;
  token.request_stop(StopReason::Deadline);
  CHECK(token.stop_reason() == StopReason::Deadline);
  CHECK(token.stop_signal() == 0);
  CHECK(token.stop_description() == "deadline");
  token.reset();
  CHECK_FALSE(token.stop_requested());
  token.request_stop();
  CHECK(token.stop_description() == "api");
}

TEST_CASE("a checkpoint request is taken once", "[lifecycle]") {
  ControlToken token;
  token.request_checkpoint();
  token.request_checkpoint();
  CHECK(token.checkpoint_requested());
  CHECK(token.take_checkpoint_request());
  CHECK_FALSE(token.take_checkpoint_request());
}

TEST_CASE("wait_while_paused returns at once when not paused", "[lifecycle]") {
  ControlToken token;
  CHECK(token.wait_while_paused(10ms));
}

TEST_CASE("wait_while_paused times out while still paused", "[lifecycle]") {
  ControlToken token;
  token.request_pause();
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(token.wait_while_paused(50ms));
  CHECK(std::chrono::steady_clock::now() - start >= 45ms);
  CHECK(token.pause_requested());
}

TEST_CASE("a resume from another thread wakes the paused thread without spinning", "[lifecycle]") {
  ControlToken token;
  token.request_pause();
  const double cpu_before = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::thread resumer([&] {
    std::this_thread::sleep_for(300ms);
    token.request_resume();
  });
  CHECK(token.wait_while_paused());
  const auto waited = std::chrono::steady_clock::now() - start;
  resumer.join();
  CHECK(waited >= 290ms);
  CHECK(waited < 2s);
  CHECK_FALSE(token.pause_requested());
  CHECK(process_cpu_seconds() - cpu_before < 0.05);  // blocked, not polling
}

TEST_CASE("a stop ends a pause", "[lifecycle]") {
  ControlToken token;
  token.request_pause();
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    token.request_stop(StopReason::Api);
  });
  CHECK(token.wait_while_paused(5s));
  stopper.join();
  CHECK(token.stop_requested());
  CHECK(token.pause_requested());  // the pause request stands; the stop takes precedence
}

TEST_CASE("every paused thread wakes on resume", "[lifecycle]") {
  ControlToken token;
  token.request_pause();
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (token.wait_while_paused(5s)) ++woken;
    });
  }
  std::this_thread::sleep_for(50ms);
  token.request_resume();
  for (auto& t : waiters) t.join();
  CHECK(woken == 3);
}

TEST_CASE("wait_for_request sleeps until a request arrives", "[lifecycle]") {
  ControlToken token;
  auto start = std::chrono::steady_clock::now();
  token.wait_for_request(30ms);
  CHECK(std::chrono::steady_clock::now() - start >= 25ms);
  std::thread requester([&] {
    std::this_thread::sleep_for(20ms);
    token.request_checkpoint();
  });
  start = std::chrono::steady_clock::now();
  token.wait_for_request(5s);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  requester.join();
  CHECK(token.take_checkpoint_request());
}

TEST_CASE("adopt_stop replaces the reason and keeps the first time", "[lifecycle]") {
  ControlToken token;
  token.request_stop(StopReason::Signal, SIGINT);
  const auto first_time = token.stop_time_ns();
  token.adopt_stop(StopReason::Signal, SIGTERM);
  CHECK(token.stop_signal() == SIGTERM);
  CHECK(token.stop_time_ns() == first_time);
  CHECK_FALSE(token.force_requested());

  ControlToken fresh;
  fresh.adopt_stop(StopReason::Deadline, 0, true);
  CHECK(fresh.stop_requested());
  CHECK(fresh.stop_reason() == StopReason::Deadline);
  CHECK(fresh.stop_time_ns() > 0);
  CHECK(fresh.force_requested());
}
