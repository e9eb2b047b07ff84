// custom_loop: trains a small CNN on synthetic data with yolotrain's lifecycle core.
// Exit codes: 0 completed, 130/143 stopped by SIGINT/SIGTERM (checkpoint written), 75 stopped to
// be resumed (--pause-release exit), 1 runtime error, 2 usage error.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "custom_loop.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace {

constexpr const char* kUsage =
    "usage: custom_loop --dir DIR --steps N [--seed S] [--batch B] [--save-every-steps K]\n"
    "                   [--save-interval-s T] [--step-delay-ms M] [--hold-at-step N]\n"
    "                   [--pause-release cache|offload|exit] [--device cpu|cuda] [--fc-width W] [--threads T]\n"
    "                   [--control HOST:PORT [--control-token-file FILE]]\n"
    "Running again with the same --dir resumes from the newest valid checkpoint.\n"
    "Signals: SIGINT/SIGTERM stop with a checkpoint, SIGUSR1 pause, SIGUSR2/SIGCONT resume,\n"
    "SIGHUP checkpoint now, Ctrl+Z pause and suspend (fg resumes).\n"
    "--control HOST:PORT: the same over HTTP (POST /v1/pause, /v1/resume, /v1/stop, /v1/checkpoint;\n"
    "GET /v1/status, /metrics); a stop over HTTP exits 75. Off 127.0.0.1 it needs --control-token-file.\n"
    "--hold-at-step N: after step N, wait for a signal before going on (to aim one at a known step).\n"
    "--hold-at-phase P: at the first pause's phase P (before-checkpoint, after-checkpoint, after-release,\n"
    "before-self-stop, after-continue) print 'held at P' and wait until the file DIR/release-P exists.\n";

std::int64_t parse_int(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || value.empty()) {
    throw custom_loop::UsageError(flag + " needs an integer, got '" + value + "'");
  }
  return v;
}

double parse_double(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v < 0) {
    throw custom_loop::UsageError(flag + " needs a non-negative number, got '" + value + "'");
  }
  return v;
}

bool phase_named(const std::string& name) {
  namespace lc = yolotrain::lifecycle;
  for (auto p : {lc::PausePhase::BeforeCheckpoint, lc::PausePhase::AfterCheckpoint, lc::PausePhase::AfterRelease,
                 lc::PausePhase::BeforeSelfStop, lc::PausePhase::AfterContinue}) {
    if (name == lc::to_string(p)) return true;
  }
  return false;
}

// --hold-at-phase: the fault-injection point of the pause sequence tests (a test sends its signal
// while the run is held there, then creates the release file).
void hold_at_phase(yolotrain::lifecycle::ControlToken& token, const custom_loop::Options& o) {
  if (o.hold_at_phase.empty()) return;
  token.set_phase_hook([name = o.hold_at_phase, dir = o.dir, held = false](auto phase) mutable {
    if (held || name != yolotrain::lifecycle::to_string(phase)) return;
    held = true;
    std::cout << "held at " << name << std::endl;
    const std::filesystem::path release = dir / ("release-" + name);
    while (!std::filesystem::exists(release)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
}

custom_loop::Options parse(int argc, char** argv) {
  custom_loop::Options o;
  using Setter = std::function<void(const std::string&, const std::string&)>;
  const std::map<std::string, Setter> flags = {
      {"--dir", [&](auto&, auto& v) { o.dir = v; }},
      {"--steps", [&](auto& f, auto& v) { o.steps = parse_int(f, v); }},
      {"--seed", [&](auto& f, auto& v) { o.seed = static_cast<std::uint64_t>(parse_int(f, v)); }},
      {"--batch", [&](auto& f, auto& v) { o.batch = parse_int(f, v); }},
      {"--save-every-steps", [&](auto& f, auto& v) { o.save_every_steps = parse_int(f, v); }},
      {"--save-interval-s", [&](auto& f, auto& v) { o.save_interval_s = parse_double(f, v); }},
      {"--step-delay-ms", [&](auto& f, auto& v) { o.step_delay_ms = static_cast<int>(parse_int(f, v)); }},
      {"--hold-at-step", [&](auto& f, auto& v) { o.hold_at_step = parse_int(f, v); }},
      {"--hold-at-phase", [&](auto&, auto& v) { o.hold_at_phase = v; }},
      {"--pause-release", [&](auto&, auto& v) { o.pause_release = v; }},
      {"--device", [&](auto&, auto& v) { o.device = v; }},
      {"--fc-width", [&](auto& f, auto& v) { o.fc_width = parse_int(f, v); }},
      {"--threads", [&](auto& f, auto& v) { o.threads = static_cast<int>(parse_int(f, v)); }},
      {"--control", [&](auto&, auto& v) { o.control = v; }},
      {"--control-token-file", [&](auto&, auto& v) { o.control_token_file = v; }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const auto eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (flags.count(flag) && i + 1 < argc) {
      value = argv[++i];
    } else if (flags.count(flag)) {
      throw custom_loop::UsageError(flag + " needs a value");
    }
    const auto it = flags.find(flag);
    if (it == flags.end()) throw custom_loop::UsageError("unknown flag '" + flag + "'");
    it->second(flag, value);
  }
  if (o.dir.empty()) throw custom_loop::UsageError("--dir is required");
  if (o.steps <= 0) throw custom_loop::UsageError("--steps is required and must be positive");
  if (o.save_every_steps < 0 || o.step_delay_ms < 0 || o.fc_width < 0 || o.threads < 0) {
    throw custom_loop::UsageError("--save-every-steps, --step-delay-ms, --fc-width and --threads must be >= 0");
  }
  if (!o.hold_at_phase.empty() && !phase_named(o.hold_at_phase)) {
    throw custom_loop::UsageError("--hold-at-phase must be before-checkpoint, after-checkpoint, after-release, "
                                  "before-self-stop or after-continue, not '" + o.hold_at_phase + "'");
  }
  std::error_code ec;
  if (std::filesystem::exists(o.dir, ec) && !std::filesystem::is_directory(o.dir, ec)) {
    throw custom_loop::UsageError("--dir " + o.dir.string() + " is a file, not a folder; pick another path");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace lc = yolotrain::lifecycle;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  }
  try {
    const custom_loop::Options options = parse(argc, argv);
    lc::ControlToken token;
    lc::SignalBinding signals(token);
    hold_at_phase(token, options);
    lc::CudaGuard guard;
    const custom_loop::Result r = custom_loop::train(options, token, std::cout);
    signals.ignore_from_now();  // a late signal must not turn the exit status into "killed"
    switch (r.outcome) {
      case custom_loop::Outcome::Completed:
        std::cout << "completed " << r.step << " steps" << std::endl;
        std::cout << "weights-sha256: " << r.digest << std::endl;
        return 0;
      case custom_loop::Outcome::Exited:
        std::cout << "paused to exit at step " << r.step << "; checkpoint " << r.checkpoint.string()
                  << "; run again with the same arguments to resume" << std::endl;
        return 75;
      case custom_loop::Outcome::Stopped:
        std::cout << "stopped by " << token.stop_description() << " at step " << r.step << "; checkpoint "
                  << r.checkpoint.string() << std::endl;
        return token.stop_signal() > 0 ? 128 + token.stop_signal() : 75;
    }
  } catch (const custom_loop::UsageError& e) {
    std::cerr << "custom_loop: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "custom_loop: error: " << e.what() << std::endl;
    return 1;
  }
  return 1;
}
