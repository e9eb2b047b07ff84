#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

#include "catch.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <thread>

#include "test_support.hpp"

using namespace std::chrono_literals;
namespace lc = yolotrain::lifecycle;

namespace {

std::atomic<int> g_previous_handler_calls{0};
void previous_handler(int) { ++g_previous_handler_calls; }

// Runs `body` in a forked child and returns its exit code (or 128+signal).
int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The blocked-signal mask of one thread of this process, from /proc.
unsigned long long blocked_mask(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

}  // namespace

TEST_CASE("the default mapping follows the design", "[lifecycle]") {
  const auto m = lc::default_signal_mapping();
  CHECK(m.at(SIGINT) == lc::SignalAction::Stop);
  CHECK(m.at(SIGTERM) == lc::SignalAction::Stop);
  CHECK(m.at(SIGUSR1) == lc::SignalAction::Pause);
  CHECK(m.at(SIGUSR2) == lc::SignalAction::Resume);
  CHECK(m.at(SIGCONT) == lc::SignalAction::Resume);
  CHECK(m.at(SIGHUP) == lc::SignalAction::Checkpoint);
  CHECK(m.at(SIGTSTP) == lc::SignalAction::Suspend);
}

TEST_CASE("signals set requests on the token while the binding lives", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  raise(SIGUSR1);
  CHECK(token.pause_requested());
  raise(SIGUSR2);
  CHECK_FALSE(token.pause_requested());
  raise(SIGHUP);
  CHECK(token.take_checkpoint_request());
  raise(SIGTERM);
  CHECK(token.stop_requested());
  CHECK(token.stop_signal() == SIGTERM);
  raise(SIGINT);  // within a second of the first: a duplicate, not a forced exit
  CHECK(token.stop_signal() == SIGTERM);
}

TEST_CASE("the previous handler is back once the binding is gone", "[lifecycle]") {
  struct sigaction sa {}, old {};
  sa.sa_handler = previous_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, &old);
  g_previous_handler_calls = 0;
  lc::ControlToken token;
  {
    lc::SignalBinding binding(token);
    raise(SIGUSR1);
    CHECK(token.pause_requested());
    CHECK(g_previous_handler_calls == 0);
  }
  token.request_resume();
  raise(SIGUSR1);
  CHECK(g_previous_handler_calls == 1);
  CHECK_FALSE(token.pause_requested());
  sigaction(SIGUSR1, &old, nullptr);
}

TEST_CASE("the binding restores the thread's signal mask", "[lifecycle]") {
  sigset_t block, before, after;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &block, &before);
  {
    lc::ControlToken token;
    lc::SignalBinding binding(token);
    sigset_t during;
    pthread_sigmask(SIG_SETMASK, nullptr, &during);
    CHECK_FALSE(sigismember(&during, SIGUSR1));  // a blocked signal could never reach the token
  }
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  CHECK(sigismember(&after, SIGUSR1));
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

TEST_CASE("the mapping is configurable", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBindingOptions options;
  options.mapping = {{SIGUSR1, lc::SignalAction::Checkpoint}, {SIGUSR2, lc::SignalAction::Stop}};
  lc::SignalBinding binding(token, options);
  CHECK(binding.signals() == std::vector<int>{SIGUSR1, SIGUSR2});
  raise(SIGUSR1);
  CHECK_FALSE(token.pause_requested());
  CHECK(token.take_checkpoint_request());
  raise(SIGUSR2);
  CHECK(token.stop_signal() == SIGUSR2);
}

TEST_CASE("only one binding may be alive", "[lifecycle]") {
  lc::ControlToken a, b;
  lc::SignalBinding first(a);
  CHECK_THROWS_AS(lc::SignalBinding(b), yolotrain::Error);
}

TEST_CASE("unhandleable signals are refused", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBindingOptions options;
  options.mapping = {{SIGKILL, lc::SignalAction::Stop}};
  CHECK_THROWS_WITH(lc::SignalBinding(token, options), Catch::Contains("cannot be handled"));
  lc::SignalBinding ok(token);  // the failed one left no binding behind
}

TEST_CASE("a second stop signal a second later forces an immediate exit", "[lifecycle]") {
  const int code = in_child([] {
    lc::ControlToken token;
    lc::SignalBindingOptions options;
    options.force_exit_after = 100ms;
    lc::SignalBinding binding(token, options);
    raise(SIGTERM);
    if (!token.stop_requested()) return 3;
    std::this_thread::sleep_for(150ms);
    raise(SIGINT);  // forced: _exit(128 + SIGINT)
    return 4;
  });
  CHECK(code == 130);
}

TEST_CASE("a duplicate stop signal within the window is one graceful stop", "[lifecycle]") {
  const int code = in_child([] {
    lc::ControlToken token;
    lc::SignalBinding binding(token);
    raise(SIGINT);
    std::this_thread::sleep_for(10ms);
    raise(SIGINT);  // as torchrun forwards a terminal's Ctrl+C
    return token.stop_signal() == SIGINT ? 0 : 5;
  });
  CHECK(code == 0);
}

TEST_CASE("once the run is over, late signals are ignored even after the binding is gone", "[lifecycle]") {
  const int code = in_child([] {
    lc::ControlToken token;
    {
      lc::SignalBindingOptions options;
      options.force_exit_after = 10ms;
      lc::SignalBinding binding(token, options);
      raise(SIGTERM);  // a stop that raced the end of the run
      std::this_thread::sleep_for(20ms);
      binding.ignore_from_now();
      for (int signo : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP}) raise(signo);  // no forced exit either
      if (token.pause_requested() || token.take_checkpoint_request()) return 3;
    }
    // Gone: the default actions (death for all five) are not restored.
    for (int signo : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP}) raise(signo);
    struct sigaction now {};
    sigaction(SIGUSR2, nullptr, &now);
    return now.sa_handler == SIG_IGN ? 0 : 4;
  });
  CHECK(code == 0);
}

TEST_CASE("signals reach the token while libtorch's threads compute", "[lifecycle]") {
  at::set_num_threads(2);
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  std::atomic<bool> done{false};
  std::thread sender([&] {
    for (int i = 0; i < 50; ++i) {
      kill(getpid(), SIGHUP);  // process-directed: any thread may receive it
      std::this_thread::sleep_for(1ms);
    }
    kill(getpid(), SIGTERM);
    done = true;
  });
  at::Tensor a = at::rand({256, 256});
  int rounds = 0;
  while (!done || !token.stop_requested()) {
    a = at::matmul(a, a).tanh();
    if (++rounds > 100000) break;
  }
  sender.join();
  CHECK(token.stop_signal() == SIGTERM);
  CHECK(token.take_checkpoint_request());
}

TEST_CASE("the checkpoint writer thread never takes the lifecycle signals", "[lifecycle]") {
  yolotrain::test::TempDir dir;
  lc::CheckpointStore store({dir.path(), 2, "m", "ckpt", {}});
  const int before = yolotrain::test::thread_count();
  std::set<pid_t> earlier;  // threads that exist already (under ThreadSanitizer, its own among them)
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    earlier.insert(std::stoi(e.path().filename().string()));
  }
  lc::Checkpoint c;
  c.tensors.emplace_back("x", at::ones({4}));
  store.save_async(c);
  store.wait();
  REQUIRE(yolotrain::test::thread_count() == before + 1);
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = std::stoi(e.path().filename().string());
    if (earlier.count(tid)) continue;  // the store's writer is the one thread started since
    const unsigned long long mask = blocked_mask(tid);
    if (mask & (1ULL << (SIGTERM - 1))) {
      CHECK((mask & (1ULL << (SIGINT - 1))) != 0);
      CHECK((mask & (1ULL << (SIGUSR1 - 1))) != 0);
      CHECK((mask & (1ULL << (SIGHUP - 1))) != 0);
      ++checked;
    }
  }
  CHECK(checked == 1);
}
