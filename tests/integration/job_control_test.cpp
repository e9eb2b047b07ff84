// Job control without a hang (docs/lifecycle.md "Suspend: the order of job-control signals"): every
// signal a scheduler, a shell or a person sends, at every phase of the suspend sequence, and a
// storm of suspends and continues. Real processes, real signals; each cell holds the run at its
// phase (custom_loop --hold-at-phase, the lifecycle core's fault-injection point), sends its signal
// there, lets the run go on, and waits for the state the table says: never for a clock.
#include <ATen/ATen.h>

#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

#include "catch.hpp"
#include <signal.h>

#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "test_support.hpp"
#include "train_runs.hpp"

namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;

namespace job_control_cells {  // named: the unity build merges the test files' anonymous namespaces

constexpr int kHeldStep = 6;

std::vector<std::string> loop_args(const fs::path& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {CUSTOM_LOOP_PATH, "--dir", dir.string(), "--steps", "18", "--seed", "5",
                                "--batch", "16", "--threads", "1", "--save-interval-s", "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Held after kHeldStep until a signal comes (and, with `phase`, at that phase of the first pause).
std::vector<std::string> held_args(const fs::path& dir, const std::string& phase) {
  std::vector<std::string> extra = {"--hold-at-step", std::to_string(kHeldStep)};
  if (!phase.empty()) extra.insert(extra.end(), {"--hold-at-phase", phase});
  return loop_args(dir, extra);
}

std::string digest_of(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("weights-sha256: ([0-9a-f]{64})")) ? m[1].str() : "";
}

const std::string& loop_baseline() {
  static const std::string digest = [] {
    yt::TempDir tmp;
    const yt::Finished f = yt::run_to_end(loop_args(tmp / "run"), tmp / "out.txt");
    INFO(f.output);
    REQUIRE(f.code == 0);
    return digest_of(f.output);
  }();
  return digest;
}

// Where the signal is sent: a phase of the sequence the run holds at, or while it is stopped.
constexpr const char* kWhileStopped = "while-stopped";

// What the run does after the signal, before anything else is sent to it.
enum class First {
  Runs,           ///< goes on and completes (exit 0, the uninterrupted run's weights)
  Stops,          ///< is stopped (state T); a SIGCONT then lets it end as `code` says
  Pauses,         ///< waits paused, not stopped; SIGUSR2 resumes it to completion
  RunsOrPauses,   ///< either, as the kernel orders two pending handlers (see the table in docs)
  Exits,          ///< stops with a checkpoint of the held step and exits `code`
};

struct Cell {
  const char* phase;
  int signo;
  First first;
  int code;                    ///< the exit status in the end (0, 130, 143)
  First then = First::Runs;  ///< for Stops: what the SIGCONT leads to (Runs, Pauses or Exits)
};

const char* name_of(int signo) { return sigabbrev_np(signo); }

// The table of docs/lifecycle.md: what each (phase, signal) does after a SIGTSTP.
std::vector<Cell> cells_at(const std::string& phase) {
  const char* p = nullptr;
  for (const char* known : {"before-checkpoint", "after-checkpoint", "after-release", "before-self-stop",
                            "after-continue", kWhileStopped}) {
    if (phase == known) p = known;
  }
  REQUIRE(p != nullptr);
  if (phase == kWhileStopped) {  // nothing runs while stopped: each signal waits for the SIGCONT; a
    // SIGUSR1 and the SIGCONT are then taken lowest number first on one thread (the pause resumed), or
    // at once on two threads (docs/lifecycle.md): running, or paused in its process
    return {{p, SIGTSTP, First::Stops, 0},
            {p, SIGSTOP, First::Stops, 0},
            {p, SIGCONT, First::Runs, 0},
            {p, SIGUSR1, First::Stops, 0, First::RunsOrPauses},
            {p, SIGUSR2, First::Stops, 0},
            {p, SIGTERM, First::Stops, 143, First::Exits},
            {p, SIGINT, First::Stops, 130, First::Exits},
            {p, SIGHUP, First::Stops, 0}};
  }
  if (phase == "after-continue") {  // the suspend is over: each signal means what it means while running
    return {{p, SIGTSTP, First::Stops, 0},       {p, SIGSTOP, First::Stops, 0},  {p, SIGCONT, First::Runs, 0},
            {p, SIGUSR1, First::Pauses, 0},       {p, SIGUSR2, First::Runs, 0},   {p, SIGTERM, First::Exits, 143},
            {p, SIGINT, First::Exits, 130},       {p, SIGHUP, First::Runs, 0}};
  }
  // Before the self-stop the SIGTSTP is still pending in the kernel: what comes after it decides.
  return {{p, SIGTSTP, First::Stops, 0},  {p, SIGSTOP, First::Stops, 0}, {p, SIGCONT, First::Runs, 0},
          {p, SIGUSR1, First::Stops, 0},  {p, SIGUSR2, First::Runs, 0},  {p, SIGTERM, First::Exits, 143},
          {p, SIGINT, First::Exits, 130}, {p, SIGHUP, First::Stops, 0}};
}

bool stopped(const yt::Child& c) { return yt::process_state(c.pid) == 'T'; }

// The run waits paused in its process, not stopped by the kernel.
bool paused_not_stopped(const yt::Child& c, const fs::path& dir) {
  const char s = yt::process_state(c.pid);
  return yt::in_state(dir, "paused") && s != 'T' && s != 0 && s != 'Z';
}

bool exited(const yt::Child& c) {
  const char s = yt::process_state(c.pid);
  return s == 0 || s == 'Z';
}

void check_end(yt::Child& child, const fs::path& tmp, int expected) {
  const fs::path dir = tmp / "run";
  const auto code = yt::wait_exit(child, 60s);  // a run left stopped with no SIGCONT to come fails here
  const std::string out = yt::slurp(tmp / "out.txt");
  INFO(out);
  REQUIRE(code == expected);
  if (expected == 0) {
    CHECK(digest_of(out) == loop_baseline());
    return;
  }
  lc::CheckpointStore store({dir, 2, "", "ckpt", {}});
  const auto latest = store.load_latest();
  REQUIRE(latest.checkpoint);
  CHECK(latest.checkpoint->meta.step == kHeldStep);  // the paused step: nothing lost
  const yt::Finished resumed = yt::run_to_end(loop_args(dir), tmp / "out2.txt");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK(digest_of(resumed.output) == loop_baseline());
}

void run_cell(const Cell& cell) {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  const std::string phase = cell.phase;
  const bool held = phase != kWhileStopped;
  yt::Child child = yt::spawn(held_args(dir, held ? phase : ""), tmp / "out.txt");
  REQUIRE(yt::wait_until([&] { return yt::reached_step(dir, kHeldStep); }, 60s));
  kill(child.pid, SIGTSTP);  // the suspend whose sequence the cell interrupts
  if (phase == "after-continue" || phase == kWhileStopped) {
    REQUIRE(yt::wait_until([&] { return stopped(child); }, 60s));  // it stopped itself, checkpoint written
    CHECK(yt::in_state(dir, "paused"));
    if (held) kill(child.pid, SIGCONT);
  }
  if (held) {
    REQUIRE(yt::wait_until([&] { return yt::slurp(tmp / "out.txt").find("held at " + phase) != std::string::npos; },
                           60s));
  }
  kill(child.pid, cell.signo);
  if (held) std::ofstream(dir / ("release-" + phase)) << "go";
  First now = cell.first;
  if (now == First::Stops) {
    REQUIRE(yt::wait_until([&] { return stopped(child); }, 60s));
    kill(child.pid, SIGCONT);
    now = cell.then;
  }
  if (now == First::Pauses || now == First::RunsOrPauses) {
    // Paused in its process, not stopped (a pause taken late is also a pause: SIGUSR2 ends either).
    REQUIRE(yt::wait_until([&] { return exited(child) || paused_not_stopped(child, dir); }, 60s));
    if (now == First::Pauses) REQUIRE_FALSE(exited(child));
    // Resumed by SIGUSR2; one that overtook a pause still being taken on another thread is followed
    // by another, until the run ends.
    for (int i = 0; i < 30 && !exited(child); ++i) {
      kill(child.pid, SIGUSR2);
      yt::wait_until([&] { return exited(child); }, 2s);
    }
  }
  check_end(child, tmp.path(), cell.code);
}

void run_phase(const std::string& phase) {
  for (const Cell& cell : cells_at(phase)) {
    INFO("SIG" << name_of(cell.signo) << " " << phase << " a SIGTSTP's sequence");
    run_cell(cell);
  }
}

}  // namespace job_control_cells

using job_control_cells::kWhileStopped;
using job_control_cells::run_phase;

TEST_CASE("job control: every signal before the suspend's checkpoint", "[integration][job-control]") {
  run_phase("before-checkpoint");
}

TEST_CASE("job control: every signal after the suspend's checkpoint", "[integration][job-control]") {
  run_phase("after-checkpoint");
}

TEST_CASE("job control: every signal after the suspend released memory", "[integration][job-control]") {
  run_phase("after-release");
}

TEST_CASE("job control: every signal just before the process stops itself", "[integration][job-control]") {
  run_phase("before-self-stop");
}

TEST_CASE("job control: every signal while the process is stopped", "[integration][job-control]") {
  run_phase(kWhileStopped);
}

TEST_CASE("job control: every signal just after the SIGCONT", "[integration][job-control]") {
  run_phase("after-continue");
}

// Many suspends and continues with random gaps against a real yolo_train run (a scheduler's
// SIGTSTP/SIGCONT, Slurm's SIGTSTP/SIGSTOP/SIGCONT): every round ends with a SIGCONT, so the run
// must go on training, then stop on SIGTERM and resume to the uninterrupted run's weights.
TEST_CASE("job control: a storm of SIGTSTP/SIGCONT and SIGTSTP/SIGSTOP/SIGCONT leaves yolo_train training",
          "[integration][job-control]") {
  yt::TempDir tmp;
  const fs::path dir = tmp / "run";
  yt::Child child = yt::spawn(yt::train_args(tmp.path(), {"epochs=8"}), tmp / "out.txt");
  REQUIRE(yt::wait_for_step(dir, 2));
  std::mt19937 random(20261207);
  // Gaps of 0-20 ms (a SIGCONT that beats the run to its safe point) and, one in four, 50-400 ms
  // (the pause sequence under way, or the process already stopped by itself or by SIGSTOP).
  std::uniform_int_distribution<int> short_us(0, 20000), long_us(50000, 400000), kind(0, 2), coin(0, 3);
  const auto pause = [&] {
    std::this_thread::sleep_for(std::chrono::microseconds(coin(random) == 0 ? long_us(random) : short_us(random)));
  };
  // Up to 60 rounds, while at least half of the run's 32 steps are left (SIGTERM must find it training).
  for (int round = 0; round < 60 && yt::status_of(dir).value("step", 0) < 14; ++round) {
    kill(child.pid, SIGTSTP);
    if (kind(random) != 0) pause();
    if (kind(random) == 2) {
      kill(child.pid, SIGSTOP);
      pause();
    }
    kill(child.pid, SIGCONT);
    if (kind(random) != 0) pause();
  }
  const std::int64_t after = yt::status_of(dir).value("step", 0);
  INFO(yt::slurp(tmp / "out.txt"));
  REQUIRE(yt::wait_for_step(dir, after + 2, 120s));  // training on: not left stopped
  REQUIRE(yt::wait_until([&] { return yt::in_state(dir, "running"); }, 60s));
  kill(child.pid, SIGTERM);
  const auto code = yt::wait_exit(child, 120s);
  CHECK(code == 143);
  const yt::Finished resumed = yt::run_to_end(yt::train_args(tmp.path(), {"epochs=8", "resume=true"}), tmp / "o2.txt");
  INFO(resumed.output);
  REQUIRE(resumed.code == 0);
  CHECK(yt::weights_of(dir) == yt::baseline({"epochs=8"}));  // an uninterrupted run's
}
