#include "yolotrain/lifecycle/control/pause.hpp"

#include "catch.hpp"

#include <functional>
#include <thread>

#include "yolotrain/error.hpp"

namespace lc = yolotrain::lifecycle;

namespace {

struct Recorder {
  std::vector<std::string> events;
  lc::PauseSteps steps() {
    lc::PauseSteps s;
    s.checkpoint = [this] { events.push_back("checkpoint"); };
    s.offload = [this](bool to_host) { events.push_back(to_host ? "to host" : "back"); };
    s.say = [this](const std::string& line) { events.push_back(line.substr(0, line.find(" ("))); };
    s.set_state = [this](lc::RunState st) { events.push_back(std::string("state ") + lc::to_string(st)); };
    return s;
  }
};

// Runs `then` on another thread 50 ms from now (the pause's resume or stop).
std::thread in_50ms(std::function<void()> then) {
  return std::thread([then] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    then();
  });
}

}  // namespace

TEST_CASE("pause_run runs the whole pause sequence and resumes", "[lifecycle]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  Recorder r;
  token.request_pause();
  std::thread resumer = in_50ms([&] { token.request_resume(); });
  CHECK(lc::pause_run(token, status, lc::PauseRelease::Offload, 12, r.steps()) == lc::PauseEnd::Resumed);
  resumer.join();
  CHECK(r.events == std::vector<std::string>{"state pausing", "checkpoint", "to host", "paused at step 12",
                                             "state paused", "back", "resumed at step 12", "state running"});
}

TEST_CASE("pause_run ends on a stop while paused, and after the checkpoint with exit", "[lifecycle]") {
  lc::ControlToken token;
  lc::RunStatus status("");
  Recorder cache;
  token.request_pause();
  std::thread stopper = in_50ms([&] { token.request_stop(lc::StopReason::Api); });
  CHECK(lc::pause_run(token, status, lc::PauseRelease::Cache, 3, cache.steps()) == lc::PauseEnd::Stopped);
  stopper.join();
  CHECK(cache.events == std::vector<std::string>{"state pausing", "checkpoint", "paused at step 3", "state paused",
                                                 "state running"});
  Recorder exit;
  CHECK(lc::pause_run(token, status, lc::PauseRelease::Exit, 3, exit.steps()) == lc::PauseEnd::Exit);
  CHECK(exit.events == std::vector<std::string>{"state pausing", "checkpoint"});
  CHECK(lc::parse_pause_release("offload") == lc::PauseRelease::Offload);
  CHECK_THROWS_WITH(lc::parse_pause_release("later"), Catch::Contains("'later'"));
}
