// Prints the lifecycle core's costs: token polling, checkpoint stall (async vs sync), SIGTERM to
// exit, and memory over repeated start/stop cycles. Figures only; nothing here asserts a time.
#include <ATen/ATen.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "custom_loop.hpp"
#include "yolotrain/lifecycle.hpp"

namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
using Clock = std::chrono::steady_clock;

namespace {

// `rm -rf`: std::filesystem::remove_all is broken in PyTorch's wheels (a crash on GPU machines).
void remove_tree(const fs::path& p) {
  if (fs::exists(p)) std::system(("rm -rf '" + p.string() + "'").c_str());
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("yolotrain-bench-" + std::to_string(getpid())) / name;
  remove_tree(p);
  fs::create_directories(p);
  return p;
}

custom_loop::Options loop_options(const fs::path& dir, std::int64_t steps) {
  custom_loop::Options o;
  o.dir = dir;
  o.steps = steps;
  o.batch = 32;
  o.save_interval_s = 0;
  o.quiet = true;
  return o;
}

double step_ms() {
  lc::ControlToken token;
  std::ostringstream log;
  custom_loop::train(loop_options(fresh_dir("warm"), 20), token, log);
  const auto t = Clock::now();
  custom_loop::train(loop_options(fresh_dir("steps"), 200), token, log);
  return ms_since(t) / 200.0;
}

void bench_poll(double step) {
  lc::ControlToken token;
  constexpr long kPolls = 100'000'000;
  long seen = 0;
  const auto t = Clock::now();
  for (long i = 0; i < kPolls; ++i) {
    seen += token.stop_requested() | token.pause_requested() | token.checkpoint_requested();
    asm volatile("" : : "r"(seen) : "memory");
  }
  const double ns = ms_since(t) * 1e6 / kPolls;
  std::printf("token poll: %.2f ns per step check (stop+pause+checkpoint), %.6f%% of a %.2f ms custom_loop step\n",
              ns, 100.0 * ns / (step * 1e6), step);
}

lc::Checkpoint state_of(const lc::NamedTensors& live, lc::NamedTensors spare = {}) {
  lc::Checkpoint c;
  c.tensors = lc::host_snapshot(live, std::move(spare));
  return c;
}

void bench_stall() {
  lc::NamedTensors live;
  for (int i = 0; i < 10; ++i) live.emplace_back("t" + std::to_string(i), at::rand({1000 * 1000}));  // 40 MB
  const fs::path dir = fresh_dir("stall");
  lc::CheckpointStore store({dir, 2, "bench", "ckpt", {}});
  std::vector<double> sync_ms, async_ms;
  for (int rep = 0; rep < 5; ++rep) {
    auto t = Clock::now();
    store.save(state_of(live));
    sync_ms.push_back(ms_since(t));
    t = Clock::now();
    lc::Checkpoint snapshot = state_of(live, store.take_spare());  // the loop's part: a host copy
    snapshot.meta.step = rep + 100;
    store.save_async(std::move(snapshot));
    async_ms.push_back(ms_since(t));
    store.wait();
  }
  std::printf("checkpoint of 40 MB: synchronous save stalls the loop %.1f ms, save_async %.1f ms "
              "(ratio %.3f; goal <= 0.1)\n",
              median(sync_ms), median(async_ms), median(async_ms) / median(sync_ms));
}

void bench_sigterm(double step) {
  const fs::path dir = fresh_dir("sigterm");
  const std::string steps = "100000";
  const pid_t pid = fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(CUSTOM_LOOP_PATH, CUSTOM_LOOP_PATH, "--dir", dir.c_str(), "--steps", steps.c_str(), "--fc-width",
          "9600", "--save-interval-s", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until training runs (status.json says so), then time SIGTERM -> exit.
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(dir / "status.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("\"step\": 1") != std::string::npos || text.find("\"step\": 2") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const auto t = Clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  const double exit_ms = ms_since(t);
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".ytckpt") bytes = e.file_size();
  }
  std::printf("SIGTERM to exit: %.0f ms with a %.1f MB checkpoint written (exit code %d; goal <= one step + one "
              "save; a small-model step is %.2f ms)\n",
              exit_ms, bytes / 1e6, WIFEXITED(status) ? WEXITSTATUS(status) : -1, step);
}

void bench_cycles() {
  double rss_first = 0;
  int threads_first = 0;
  for (int cycle = 1; cycle <= 20; ++cycle) {
    lc::ControlToken token;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      token.request_stop();
    });
    std::ostringstream log;
    custom_loop::train(loop_options(fresh_dir("cycle"), 1000000), token, log);
    stopper.join();
    if (cycle == 1) {
      rss_first = static_cast<double>(lc::resident_bytes());
      threads_first = static_cast<int>(std::distance(fs::directory_iterator("/proc/self/task"), {}));
    }
  }
  const double rss_last = static_cast<double>(lc::resident_bytes());
  const int threads_last = static_cast<int>(std::distance(fs::directory_iterator("/proc/self/task"), {}));
  std::printf("20 start/stop cycles in one process: RSS %.1f MB after the first, %.1f MB after the last "
              "(%+.2f%%; goal < 1%%); threads %d -> %d\n",
              rss_first / 1e6, rss_last / 1e6, 100.0 * (rss_last - rss_first) / rss_first, threads_first,
              threads_last);
}

}  // namespace

int main() {
  const double step = step_ms();
  bench_poll(step);
  bench_stall();
  bench_sigterm(step);
  bench_cycles();
  remove_tree(fs::temp_directory_path() / ("yolotrain-bench-" + std::to_string(getpid())));
  return 0;
}
