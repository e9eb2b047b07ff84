#include "yolotrain/lifecycle/control/job_control.hpp"

#include <dirent.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <set>
#include <thread>

namespace yolotrain::lifecycle::job_control {
namespace {

constexpr int kLastSignal = 63;

sigset_t to_sigset(SignalSet set) noexcept {
  sigset_t s;
  sigemptyset(&s);
  for (int signo = 1; signo <= kLastSignal; ++signo) {
    if (set & bit(signo)) sigaddset(&s, signo);
  }
  return s;
}

// block_in_every_thread(): the signals to add, and how many threads have added them.
std::atomic<SignalSet> g_adding{0};
std::atomic<int> g_added{0};

// Runs on the thread it was sent to: the mask that thread returns to (uc_sigmask, restored by
// sigreturn) gains the signals, as if the thread had blocked them itself.
void add_to_returning_mask(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const SignalSet set = g_adding.load();
  for (int signo = 1; signo <= kLastSignal; ++signo) {
    if (set & bit(signo)) sigaddset(&uc->uc_sigmask, signo);
  }
  g_added.fetch_add(1);
}

std::set<pid_t> other_threads() {
  std::set<pid_t> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  const auto self = static_cast<pid_t>(syscall(SYS_gettid));
  while (const dirent* e = readdir(dir)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
    if (tid > 0 && tid != self) out.insert(tid);
  }
  closedir(dir);
  return out;
}

}  // namespace

bool can_suspend(int signo) noexcept { return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU; }

bool pending(SignalSet set) noexcept {
  if (set == 0) return false;
  sigset_t p;
  if (sigpending(&p) != 0) return false;
  for (int signo = 1; signo <= kLastSignal; ++signo) {
    if ((set & bit(signo)) && sigismember(&p, signo) == 1) return true;
  }
  return false;
}

void mask(SignalSet set, bool block) noexcept {
  if (set == 0) return;
  const sigset_t s = to_sigset(set);
  pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, nullptr);
}

bool block_in_every_thread(SignalSet set) {
  mask(set, true);
  if (set == 0) return true;
  const int carrier = SIGRTMIN;
  struct sigaction sa {}, previous {};
  sa.sa_sigaction = add_to_returning_mask;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(carrier, nullptr, &previous) != 0) return false;
  const bool ours = (previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction == add_to_returning_mask;
  if (previous.sa_handler != SIG_DFL && !ours) return false;  // the program's own use of SIGRTMIN
  sigaction(carrier, &sa, nullptr);
  g_adding.store(set);
  g_added.store(0);
  // Twice over the thread list: a thread started meanwhile by one not yet reached lacks the mask.
  std::set<pid_t> reached;
  int sent = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (pid_t tid : other_threads()) {
      if (reached.insert(tid).second && syscall(SYS_tgkill, getpid(), tid, carrier) == 0) ++sent;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (g_added.load() < sent && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  // A thread that blocks the carrier has not answered: it may run the handler later, so the
  // handler stays (SIGRTMIN's default action would end the process).
  const bool all = g_added.load() >= sent;
  if (all) sigaction(carrier, &previous, nullptr);
  return all;
}

void discard(SignalSet set) noexcept {
  if (set == 0) return;
  const sigset_t s = to_sigset(set);
  const timespec now{0, 0};
  while (sigtimedwait(&s, nullptr, &now) > 0 || errno == EINTR) {
  }
}

void flush() noexcept { kill(getpid(), SIGCONT); }

void raise_first(SignalSet set) noexcept {
  for (int signo = 1; signo <= kLastSignal; ++signo) {
    if (set & bit(signo)) {
      kill(getpid(), signo);
      return;
    }
  }
}

}  // namespace yolotrain::lifecycle::job_control
