#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/job_control.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

#include "catch.hpp"
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

// The suspend signals held by the kernel (docs/lifecycle.md "Suspend: the order of job-control
// signals"). SIGTSTP is raised to this thread only (raise()), where the binding keeps it blocked,
// so the test process itself is never stopped.

namespace lc = yolotrain::lifecycle;
namespace jc = yolotrain::lifecycle::job_control;

namespace {

bool blocked_in(pid_t tid, int signo) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (signo - 1)) & 1;
  }
  return false;
}

}  // namespace

TEST_CASE("a pending SIGTSTP is the suspend request, and a SIGCONT after it discards it", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  CHECK_FALSE(token.suspend_requested());
  raise(SIGTSTP);  // blocked: held by the kernel, the process goes on
  CHECK(token.suspend_requested());
  CHECK(token.pause_requested());
  kill(getpid(), SIGCONT);  // the kernel discards the pending stop signal; the handler resumes
  CHECK_FALSE(token.suspend_requested());
  CHECK_FALSE(token.pause_requested());
}

TEST_CASE("a SIGCONT before the SIGTSTP leaves the suspend pending", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  kill(getpid(), SIGCONT);
  raise(SIGTSTP);  // the later one wins
  CHECK(token.suspend_requested());
}

TEST_CASE("a resume or a stop asked another way discards a pending suspend", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  raise(SIGTSTP);
  token.request_resume();  // SIGUSR2, the API, the control endpoint
  CHECK_FALSE(token.suspend_requested());
  raise(SIGTSTP);
  raise(SIGTERM);
  CHECK(token.stop_requested());
  CHECK_FALSE(token.suspend_requested());
}

TEST_CASE("request_suspend is a suspend signal sent to the process, or a pause without a binding", "[lifecycle]") {
  lc::ControlToken bare;
  bare.request_suspend();
  CHECK(bare.pause_requested());
  CHECK_FALSE(bare.suspend_requested());
  lc::ControlToken token;
  lc::SignalBinding binding(token);
  token.request_suspend();  // to the process: every thread blocks SIGTSTP, so it waits in the kernel
  CHECK(token.suspend_requested());
  token.request_resume();
  CHECK_FALSE(token.suspend_requested());
}

TEST_CASE("the binding's end discards a pending suspend instead of stopping the process", "[lifecycle]") {
  {
    lc::ControlToken token;
    lc::SignalBinding binding(token);
    raise(SIGTSTP);
    REQUIRE(token.suspend_requested());
  }
  CHECK_FALSE(jc::pending(jc::bit(SIGTSTP)));  // and this test is still running
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  CHECK_FALSE(sigismember(&now, SIGTSTP));
}

TEST_CASE("only the job-control signals can suspend", "[lifecycle]") {
  lc::ControlToken token;
  lc::SignalBindingOptions options;
  options.mapping = {{SIGUSR1, lc::SignalAction::Suspend}};
  CHECK_THROWS_WITH(lc::SignalBinding(token, options),
                    Catch::Contains("cannot suspend: only SIGTSTP, SIGTTIN and SIGTTOU can"));
  CHECK(jc::can_suspend(SIGTSTP));
  CHECK(jc::can_suspend(SIGTTIN));
  CHECK(jc::can_suspend(SIGTTOU));
  CHECK_FALSE(jc::can_suspend(SIGSTOP));
  CHECK_FALSE(jc::can_suspend(SIGUSR1));
}

TEST_CASE("the binding blocks its signals in threads started before it, and takes them on its own", "[lifecycle]") {
  std::mutex m;
  std::condition_variable cv;
  bool started = false, done = false;
  pid_t early = 0;
  std::thread before([&] {  // as OpenBLAS's pool, started when the library loads
    std::unique_lock<std::mutex> lock(m);
    early = static_cast<pid_t>(syscall(SYS_gettid));
    started = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return started; });
  }
  CHECK_FALSE(blocked_in(early, SIGTSTP));
  {
    lc::ControlToken token;
    lc::SignalBinding binding(token);
    CHECK(blocked_in(early, SIGTSTP));   // a suspend cannot stop the process from there
    CHECK(blocked_in(early, SIGUSR1));   // the handlers run on the binding's thread only
    CHECK(blocked_in(early, SIGCONT));
    const auto self = static_cast<pid_t>(syscall(SYS_gettid));
    CHECK(blocked_in(self, SIGTSTP));
    CHECK_FALSE(blocked_in(self, SIGUSR1));
    kill(getpid(), SIGUSR1);  // to the process: only this thread can take it
    CHECK(token.pause_requested());
  }
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_all();
  before.join();
}
