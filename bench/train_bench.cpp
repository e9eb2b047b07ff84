// Training throughput of yolo_train's Trainer on a real dataset, where the step time goes, peak
// memory, and the stop latency (request -> run() returns with its checkpoint written).
// Run: build/bench/train_bench [data=.../coco128/data.yaml] [imgsz=320] [batch=8] [steps=30] [key=value ...]
// Without imgsz/batch it runs imgsz 320 and 640 at batch 8 and 16, one child process each (so the
// peak memory is per configuration). Prints figures only; it asserts nothing.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "yolotrain/engine/trainer.hpp"

namespace en = yolotrain::engine;
using Clock = std::chrono::steady_clock;

namespace {

long peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

std::string arg_or(const std::vector<std::string>& args, const std::string& key, const std::string& fallback) {
  for (const auto& a : args) {
    if (a.rfind(key + "=", 0) == 0) return a.substr(key.size() + 1);
  }
  return fallback;
}

Clock::time_point process_start;

// How long this process has existed (its exec and library loading included): /proc/uptime minus
// the start time in /proc/self/stat (clock ticks since boot, field 22).
double process_age_s() {
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;  // fields 3..22; the last read is starttime
  double up = 0;
  uptime >> up;
  return up - std::stod(field) / double(sysconf(_SC_CLK_TCK));
}

int run_one(std::vector<std::string> args) {
  const long steps = std::stol(arg_or(args, "steps", "30"));
  std::vector<std::string> cfg_args;
  for (const auto& a : args) {
    if (a.rfind("steps=", 0) != 0) cfg_args.push_back(a);
  }
  char dir[] = "/tmp/yolotrain-train-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  for (const char* a : {"epochs=100", "val=false", "save_interval=0", "exist_ok=true", "verbose=false"}) {
    cfg_args.insert(cfg_args.begin(), a);
  }
  cfg_args.push_back(std::string("project=") + dir);
  const en::TrainConfig cfg = en::TrainConfig::from_args(cfg_args);
  yolotrain::lifecycle::ControlToken token;
  std::atomic<long> done{0};
  Clock::time_point stop_asked{};
  std::vector<double> step_times;
  Clock::time_point last = Clock::now();
  double first_step_started = -1;  // seconds from process start to the first step's start
  en::TrainerCallbacks cb;
  cb.on_train_start = [&](const en::TrainerProgress&) {
    last = Clock::now();
    first_step_started = std::chrono::duration<double>(last - process_start).count();
  };
  cb.on_batch_end = [&](const en::TrainerProgress&) {
    const auto now = Clock::now();
    step_times.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
    if (++done == steps) {  // ask mid-way through the next step, as a signal would arrive
      std::thread([&] {
        std::this_thread::sleep_for(std::chrono::duration<double>(step_times.back() / 2));
        stop_asked = Clock::now();
        token.request_stop();
      }).detach();
    }
  };
  en::Trainer trainer(cfg, cb);
  const auto t0 = Clock::now();
  const en::RunResult r = trainer.run(token);
  const double stop_latency = std::chrono::duration<double>(Clock::now() - stop_asked).count();
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto& t = r.timings;
  const double busy = t.data_s + t.forward_s + t.loss_s + t.backward_s + t.optimizer_s + t.checkpoint_s;
  auto pct = [&](double v) { return busy > 0 ? 100.0 * v / busy : 0.0; };
  double steady = 0;  // median step time after the first 3 (oneDNN warm-up)
  std::vector<double> tail(step_times.begin() + std::min<std::size_t>(3, step_times.size()), step_times.end());
  std::sort(tail.begin(), tail.end());
  if (!tail.empty()) steady = tail[tail.size() / 2];
  std::printf(
      "imgsz %s batch %s: %.1f img/s over %lld steps (median step %.3f s = %.1f img/s); data %.1f%% forward "
      "%.1f%% loss %.1f%% backward %.1f%% optimizer %.1f%% checkpoint %.1f%%; stop latency %.3f s; peak RSS %.0f MB; "
      "process %.1f s; first step began %.2f s after process start\n",
      arg_or(args, "imgsz", "?").c_str(), arg_or(args, "batch", "?").c_str(), t.images_per_second(),
      static_cast<long long>(t.steps), steady, steady > 0 ? std::stod(arg_or(args, "batch", "8")) / steady : 0,
      pct(t.data_s), pct(t.forward_s), pct(t.loss_s), pct(t.backward_s), pct(t.optimizer_s), pct(t.checkpoint_s),
      stop_latency, double(peak_rss_kb()) / 1024.0, total, first_step_started);
  std::fflush(stdout);
  std::string cmd = std::string("rm -rf ") + dir;
  return std::system(cmd.c_str()) == 0 && r.outcome == en::RunOutcome::Stopped ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  process_start =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(process_age_s()));
  en::prefer_avx512_kernels();  // as yolo_train does
  std::vector<std::string> args(argv + 1, argv + argc);
  if (arg_or(args, "data", "").empty()) args.push_back("data=" YOLOTRAIN_SHARED_DIR "/datasets/coco128/data.yaml");
  if (!arg_or(args, "imgsz", "").empty() || !arg_or(args, "batch", "").empty()) return run_one(args);
  int rc = 0;
  for (const char* imgsz : {"imgsz=320", "imgsz=640"}) {
    for (const char* batch : {"batch=8", "batch=16"}) {
      std::vector<std::string> child = args;
      child.push_back(imgsz);
      child.push_back(batch);
      if (std::string(imgsz) == "imgsz=640" && arg_or(args, "steps", "").empty()) child.push_back("steps=12");
      std::vector<char*> argv_child{argv[0]};
      for (auto& a : child) argv_child.push_back(a.data());
      argv_child.push_back(nullptr);
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid == 0) {
        execv("/proc/self/exe", argv_child.data());
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      rc |= WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
  }
  return rc;
}
