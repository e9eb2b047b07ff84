#include "yolotrain/dist/requests.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

#include "catch.hpp"

#include <algorithm>
#include <csignal>
#include <initializer_list>

using namespace yolotrain::dist;
using yolotrain::lifecycle::ControlToken;
using yolotrain::lifecycle::StopReason;

namespace {
/// What agree_max computes over the ranks.
std::uint32_t max_of(std::initializer_list<std::uint32_t> bits) { return std::max(bits); }
}  // namespace

TEST_CASE("requests: a quiet token asks for nothing", "[dist]") {
  ControlToken token;
  CHECK(lifecycle_bits(token) == 0);
  const auto a = decode_bits(0);
  CHECK_FALSE(a.stop);
  CHECK_FALSE(a.pause);
  CHECK_FALSE(a.checkpoint);
  CHECK_FALSE(a.resume);
}

TEST_CASE("requests: a stop on any rank wins over pauses and checkpoints", "[dist]") {
  ControlToken stopping, pausing, saving;
  stopping.request_stop(StopReason::Signal, SIGTERM);
  pausing.request_pause();
  saving.request_checkpoint();
  const auto a = decode_bits(max_of({lifecycle_bits(pausing), lifecycle_bits(stopping), lifecycle_bits(saving)}));
  CHECK(a.stop);
  CHECK(a.reason == StopReason::Signal);
  CHECK(a.signo == SIGTERM);
  CHECK_FALSE(a.pause);
  CHECK_FALSE(a.checkpoint);
}

TEST_CASE("requests: every rank agrees on one stop reason", "[dist]") {
  ControlToken sigint, sigterm, deadline, api, forced, remote, preemption;
  sigint.request_stop(StopReason::Signal, SIGINT);
  sigterm.request_stop(StopReason::Signal, SIGTERM);
  deadline.request_stop(StopReason::Deadline);
  api.request_stop(StopReason::Api);
  forced.request_stop(StopReason::Api, 0, true);
  remote.request_stop(StopReason::Remote);
  preemption.request_stop(StopReason::Preemption);
  CHECK(decode_bits(max_of({lifecycle_bits(sigint), lifecycle_bits(sigterm)})).signo == SIGTERM);
  CHECK(decode_bits(max_of({lifecycle_bits(deadline), lifecycle_bits(sigint)})).signo == SIGINT);
  CHECK(decode_bits(max_of({lifecycle_bits(deadline), lifecycle_bits(api)})).reason == StopReason::Deadline);
  CHECK(decode_bits(lifecycle_bits(api)).reason == StopReason::Api);
  CHECK(decode_bits(max_of({lifecycle_bits(deadline), lifecycle_bits(remote)})).reason == StopReason::Remote);
  CHECK(decode_bits(max_of({lifecycle_bits(remote), lifecycle_bits(sigint)})).signo == SIGINT);
  // A cloud's notice on one host stops every rank, for that reason (exit 75), unless a signal came too.
  CHECK(decode_bits(max_of({lifecycle_bits(remote), lifecycle_bits(preemption)})).reason == StopReason::Preemption);
  CHECK(decode_bits(max_of({lifecycle_bits(preemption), lifecycle_bits(sigterm)})).signo == SIGTERM);
  const auto f = decode_bits(max_of({lifecycle_bits(forced), lifecycle_bits(sigterm)}));
  CHECK(f.force);
  CHECK(f.reason == StopReason::Api);  // the force bit ranks above the reason
}

TEST_CASE("requests: apply_agreed makes every token show the agreed stop", "[dist]") {
  ControlToken mine, other;
  mine.request_stop(StopReason::Signal, SIGINT);
  other.request_stop(StopReason::Signal, SIGTERM);
  const std::uint32_t agreed = max_of({lifecycle_bits(mine), lifecycle_bits(other)});
  ControlToken quiet;
  for (ControlToken* t : {&mine, &other, &quiet}) {
    const auto a = apply_agreed(agreed, *t);
    CHECK(a.stop);
    CHECK(t->stop_signal() == SIGTERM);  // the same exit code (143) on every rank
  }
}

TEST_CASE("requests: pause suspend and checkpoint are agreed and applied", "[dist]") {
  ControlToken pausing, suspending, saving, quiet;
  yolotrain::lifecycle::SignalBinding binding(suspending);  // SIGTSTP: kept blocked, pending = a suspend
  raise(SIGTSTP);                                            // this thread's, as a terminal's Ctrl+Z
  REQUIRE(suspending.suspend_requested());
  pausing.request_pause();
  saving.request_checkpoint();
  auto a = decode_bits(max_of({lifecycle_bits(pausing), lifecycle_bits(suspending), lifecycle_bits(quiet)}));
  CHECK(a.pause);
  CHECK(a.suspend);
  a = apply_agreed(max_of({lifecycle_bits(saving), lifecycle_bits(quiet)}), quiet);
  CHECK(a.checkpoint);
  CHECK_FALSE(a.pause);
  a = apply_agreed(a.bits, saving);
  CHECK_FALSE(saving.checkpoint_requested());  // taken: the loop writes it because a.checkpoint says so
  a = apply_agreed(lifecycle_bits(pausing), quiet);
  CHECK(quiet.pause_requested());
  CHECK_FALSE(quiet.suspend_requested());
  ControlToken other;  // another rank: the agreed suspend pauses it; it stops only for its own signal
  apply_agreed(lifecycle_bits(suspending), other);
  CHECK(other.pause_requested());
  CHECK_FALSE(other.suspend_requested());
}

TEST_CASE("requests: a checkpoint that loses to a pause stays pending", "[dist]") {
  ControlToken pausing, saving;
  pausing.request_pause();
  saving.request_checkpoint();
  const auto a = apply_agreed(max_of({lifecycle_bits(pausing), lifecycle_bits(saving)}), saving);
  CHECK(a.pause);
  CHECK_FALSE(a.checkpoint);
  CHECK(saving.checkpoint_requested());
}

TEST_CASE("requests: while paused a resume on one rank resumes all", "[dist]") {
  ControlToken still, resumed;
  still.request_pause();
  resumed.request_pause();
  resumed.request_checkpoint();
  CHECK_FALSE(decode_bits(max_of({lifecycle_bits(still, true), lifecycle_bits(resumed, true)})).resume);
  CHECK_FALSE(decode_bits(lifecycle_bits(resumed, true)).checkpoint);  // waits for the resume
  resumed.request_resume();
  const std::uint32_t agreed = max_of({lifecycle_bits(still, true), lifecycle_bits(resumed, true)});
  const auto a = apply_agreed(agreed, still, true);
  CHECK(a.resume);
  CHECK_FALSE(still.pause_requested());
  CHECK(resumed.checkpoint_requested());
  // A stop while paused wins over the resume.
  ControlToken stopping;
  stopping.request_pause();
  stopping.request_stop(StopReason::Signal, SIGINT);
  const auto s = decode_bits(max_of({agreed, lifecycle_bits(stopping, true)}));
  CHECK(s.stop);
  CHECK_FALSE(s.resume);
}
