// A worker process for the dist tests: started twice (directly with RANK/WORLD_SIZE/MASTER_PORT
// given as arguments, or by scripts/torchrun with its environment), it runs one scenario.
//   dist_test_worker MODE [RANK WORLD_SIZE PORT]
// Modes: collectives, die (the last rank dies), die0 (rank 0, the store's server, dies),
// stall (the last rank stops), signals, watchdog. Prints "OK rank R" when a scenario
// passed; failures print "FAIL ..." and exit 3.
#include <ATen/ATen.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "yolotrain/dist/dist_env.hpp"
#include "yolotrain/dist/process_group.hpp"
#include "yolotrain/dist/requests.hpp"
#include "yolotrain/dist/watchdog.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace dist = yolotrain::dist;
namespace lc = yolotrain::lifecycle;
using namespace std::chrono_literals;

namespace {

int g_rank = -1;

[[noreturn]] void fail(const std::string& what) {
  std::cout << "FAIL rank " << g_rank << ": " << what << std::endl;
  std::exit(3);
}

void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

dist::ProcessGroupOptions short_timeouts() {
  dist::ProcessGroupOptions o;
  o.timeout = 3s;
  o.connect_timeout = 20s;
  o.watchdog_grace = 2s;
  o.bucket_bytes = 1024;  // several buckets even for small tensors
  return o;
}

void check_broadcast(dist::ProcessGroup& pg) {
  const int r = pg.rank();
  std::vector<at::Tensor> t{at::full({3, 4}, r + 1.0f), at::full({5}, static_cast<std::int64_t>(10 * r)),
                            at::full({700}, r + 0.5, at::kDouble),
                            at::full({2, 3, 4, 4}, r + 2.0f).contiguous(at::MemoryFormat::ChannelsLast)};
  t[0].set_requires_grad(true);  // a leaf parameter, as the trainer passes them
  pg.broadcast_(t, 0);
  expect(at::equal(t[0], at::full({3, 4}, 1.0f)), "broadcast from 0: float");
  expect(at::equal(t[1], at::full({5}, std::int64_t{0})), "broadcast from 0: long");
  expect(at::equal(t[2], at::full({700}, 0.5, at::kDouble)), "broadcast from 0: double");
  expect(at::equal(t[3], at::full({2, 3, 4, 4}, 2.0f)), "broadcast from 0: channels_last");
  std::vector<at::Tensor> u{at::full({4}, r * 3.0f)};
  pg.broadcast_(u, pg.world_size() - 1);
  expect(at::equal(u[0], at::full({4}, (pg.world_size() - 1) * 3.0f)), "broadcast from the last rank");
}

void check_all_reduce(dist::ProcessGroup& pg) {
  const int r = pg.rank(), w = pg.world_size();
  const double mean_factor = (w + 1) / 2.0;  // mean of 1..w
  std::vector<at::Tensor> t{at::arange(1000, at::kFloat) * (r + 1),
                            at::arange(300, at::kDouble).view({3, 100}) * (r + 1)};
  pg.all_reduce_mean_(t);
  expect(at::allclose(t[0], at::arange(1000, at::kFloat) * mean_factor), "all_reduce_mean_: float");
  expect(at::allclose(t[1], at::arange(300, at::kDouble).view({3, 100}) * mean_factor), "all_reduce_mean_: double");

  // Gradients: p0 on every rank, p1 on rank 0 only, p2 nowhere.
  std::vector<at::Tensor> params{at::zeros({600}).set_requires_grad(true), at::zeros({3, 3}).set_requires_grad(true),
                                 at::zeros({4}).set_requires_grad(true)};
  params[0].mutable_grad() = at::full({600}, r + 1.0f);
  if (r == 0) params[1].mutable_grad() = at::full({3, 3}, 4.0f);
  pg.all_reduce_grads_(params);
  expect(at::allclose(params[0].grad(), at::full({600}, static_cast<float>(mean_factor))), "grads: mean");
  expect(params[1].grad().defined() && at::allclose(params[1].grad(), at::full({3, 3}, 4.0f / w)),
         "grads: missing on some ranks counts as zeros");
  expect(!params[2].grad().defined(), "grads: missing everywhere stays undefined");
}

void check_consensus(dist::ProcessGroup& pg) {
  const int r = pg.rank(), w = pg.world_size();
  expect(pg.agree_max(static_cast<std::uint32_t>(r * 7 + 3)) == static_cast<std::uint32_t>((w - 1) * 7 + 3),
         "agree_max");
  lc::ControlToken token;
  auto a = dist::agree_requests(pg, token);
  expect(!a.stop && !a.pause && !a.checkpoint, "no requests: nothing agreed");
  if (r == w - 1) token.request_checkpoint();
  a = dist::agree_requests(pg, token);
  expect(a.checkpoint && !token.checkpoint_requested(), "a checkpoint on one rank is agreed and taken");
  // Pause on one rank pauses all; a resume on another resumes all.
  if (r == w - 1) token.request_pause();
  a = dist::agree_requests(pg, token);
  expect(a.pause && token.pause_requested(), "a pause on one rank pauses all");
  std::thread resumer;
  if (r == 0) resumer = std::thread([&token] { std::this_thread::sleep_for(300ms); token.request_resume(); });
  const auto t0 = std::chrono::steady_clock::now();
  a = dist::wait_while_paused(pg, token, 50ms);
  if (resumer.joinable()) resumer.join();
  expect(a.resume && !token.pause_requested(), "a resume on rank 0 resumes all");
  expect(std::chrono::steady_clock::now() - t0 >= 250ms, "the pause lasted until the resume");
  // Different stop signals: every rank adopts the same one (the higher number, SIGTERM).
  token.request_stop(lc::StopReason::Signal, r == 0 ? SIGINT : SIGTERM);
  a = dist::agree_requests(pg, token);
  expect(a.stop && a.signo == SIGTERM && token.stop_signal() == SIGTERM, "one stop signal for all ranks");
}

int run_collectives(const dist::DistEnv& env) {
  dist::ProcessGroup pg(env, short_timeouts());
  check_broadcast(pg);
  check_all_reduce(pg);
  check_consensus(pg);
  pg.barrier();
  std::cout << "OK rank " << pg.rank() << " collectives " << pg.collectives() << " " << env.describe() << std::endl;
  return 0;
}

/// Rank `victim` kills itself (or stops itself: `stall`); the others must fail fast, naming it.
int run_lost_peer(const dist::DistEnv& env, int victim, bool stall) {
  dist::ProcessGroup pg(env, short_timeouts());
  pg.barrier();
  if (pg.rank() == victim) {
    std::this_thread::sleep_for(200ms);
    raise(stall ? SIGSTOP : SIGKILL);
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    for (int i = 0; i < 1000000; ++i) {
      pg.agree_max(0);
      std::this_thread::sleep_for(5ms);
    }
  } catch (const dist::CollectiveError& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    std::cout << "CollectiveError after " << ms.count() << " ms: " << e.what() << std::endl;
    std::cout << "missing:";
    for (int m : e.missing_ranks()) std::cout << " " << m;
    std::cout << std::endl;
    return 7;
  }
  fail("no error although rank " + std::to_string(victim) + " is gone");
}

/// Each rank binds the signals and agrees every 10 ms; prints where it stopped.
int run_signals(const dist::DistEnv& env) {
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  dist::ProcessGroup pg(env, short_timeouts());
  pg.barrier();
  std::cout << "READY rank " << pg.rank() << std::endl;
  for (int step = 0;; ++step) {
    const auto a = dist::agree_requests(pg, token);
    if (a.stop) {
      std::cout << "STOP rank " << pg.rank() << " step " << step << " signal " << a.signo << " token "
                << token.stop_signal() << std::endl;
      return 128 + token.stop_signal();
    }
    std::this_thread::sleep_for(10ms);
  }
}

int run_watchdog() {
  dist::Watchdog dog(100ms, {}, [] { return std::string("diagnosis here"); });
  auto scope = dog.watch("fake collective #1", 200ms);
  std::this_thread::sleep_for(10s);
  fail("the watchdog did not end the process");
}

void set_env(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    std::cerr << "usage: dist_test_worker MODE [RANK WORLD_SIZE PORT]\n";
    return 2;
  }
  const std::string mode = argv[1];
  if (argc == 5) {
    set_env("RANK", argv[2]);
    set_env("LOCAL_RANK", argv[2]);
    set_env("WORLD_SIZE", argv[3]);
    set_env("LOCAL_WORLD_SIZE", argv[3]);
    set_env("MASTER_ADDR", "127.0.0.1");
    set_env("MASTER_PORT", argv[4]);
    unsetenv("TORCHELASTIC_USE_AGENT_STORE");
    unsetenv("TORCHELASTIC_RESTART_COUNT");
  }
  if (mode == "watchdog") return run_watchdog();
  try {
    const auto env = dist::DistEnv::from_environment();
    if (!env) fail("WORLD_SIZE is unset or 1");
    g_rank = env->rank;
    if (mode == "collectives") return run_collectives(*env);
    if (mode == "die") return run_lost_peer(*env, env->world_size - 1, false);
    if (mode == "die0") return run_lost_peer(*env, 0, false);
    if (mode == "stall") return run_lost_peer(*env, env->world_size - 1, true);
    if (mode == "signals") return run_signals(*env);
  } catch (const std::exception& e) {
    fail(std::string("exception: ") + e.what());
  }
  fail("unknown mode " + mode);
}
