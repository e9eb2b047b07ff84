// dist_bench: the per-call cost of the collectives the trainer makes, on 2 ranks over loopback.
//   build/bench/dist_bench [--ranks N] [--calls N]
// Without RANK in the environment it starts N copies of itself (RANK/WORLD_SIZE/MASTER_* set,
// rank 0 serving the store) and prints rank 0's figures: agree_max (the per-step stop/pause
// consensus), all_reduce_grads_ on yolov8n's 3.2M gradients, broadcast_ of the same.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "yolotrain/dist/dist_env.hpp"
#include "yolotrain/dist/process_group.hpp"
#include "yolotrain/dist/requests.hpp"

namespace dist = yolotrain::dist;
using Clock = std::chrono::steady_clock;

namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

/// Median and 90th percentile of per-call times, in microseconds.
std::pair<double, double> quantiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 9 / 10]};
}

template <class F>
std::vector<double> time_calls(int n, F&& f) {
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    f();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return us;
}

int run_rank(const dist::DistEnv& env, int calls) {
  at::set_num_threads(1);
  dist::ProcessGroup pg(env);
  // yolov8n: 3,157,200 parameters in ~130 tensors; here 130 tensors of 24,286 floats each.
  std::vector<at::Tensor> params;
  for (int i = 0; i < 130; ++i) {
    params.push_back(at::randn({24286}).set_requires_grad(true));
    params.back().mutable_grad() = at::randn({24286});
  }
  yolotrain::lifecycle::ControlToken token;
  for (int i = 0; i < 50; ++i) pg.agree_max(0);  // warm-up
  const auto agree = quantiles(time_calls(calls, [&] { pg.agree_max(0); }));
  const auto requests = quantiles(time_calls(calls, [&] { dist::agree_requests(pg, token); }));
  pg.all_reduce_grads_(params);
  const auto grads = quantiles(time_calls(20, [&] { pg.all_reduce_grads_(params); }));
  const auto bcast = quantiles(time_calls(20, [&] { pg.broadcast_(params, 0); }));
  pg.barrier();
  if (pg.rank() == 0) {
    std::printf("dist_bench: %d ranks, Gloo over 127.0.0.1, 1 intra-op thread per rank\n", pg.world_size());
    std::printf("  agree_max (1 x int64 MAX)           median %8.1f us   p90 %8.1f us   (%d calls)\n", agree.first,
                agree.second, calls);
    std::printf("  agree_requests (bits+agree+apply)   median %8.1f us   p90 %8.1f us   (%d calls)\n",
                requests.first, requests.second, calls);
    std::printf(
        "  all_reduce_grads_ 3.16M floats      median %8.2f ms   p90 %8.2f ms   (20 calls, 1 bucket of 12.6 MB)\n",
        grads.first / 1000, grads.second / 1000);
    std::printf("  broadcast_ 3.16M floats             median %8.2f ms   p90 %8.2f ms   (20 calls)\n",
                bcast.first / 1000, bcast.second / 1000);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, calls = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks") ranks = std::atoi(argv[i + 1]);
    else if (a == "--calls") calls = std::atoi(argv[i + 1]);
  }
  if (const auto env = dist::DistEnv::from_environment()) return run_rank(*env, calls);
  if (ranks < 2) {
    std::fprintf(stderr, "dist_bench: --ranks must be >= 2\n");
    return 2;
  }
  const std::string port = std::to_string(free_port());
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      const std::string c = std::to_string(calls);
      execl("/proc/self/exe", argv[0], "--calls", c.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  int worst = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    worst = std::max(worst, WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  return worst;
}
