#include "test_support.hpp"

#include "yolotrain/lifecycle/memory/cuda_guard.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace yolotrain::test {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "yolotrain-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() { remove_tree(path_); }

void remove_tree(const fs::path& path) {
  // nftw, not std::filesystem::remove_all: PyTorch's wheels export a broken copy of the latter.
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) { ::remove(p);
        return 0; }, 16,
      FTW_DEPTH | FTW_PHYS);
}

Child spawn(const std::vector<std::string>& args, const fs::path& out) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  return Child{pid, out};
}

std::optional<int> wait_exit(Child& child, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    struct rusage usage {};
    const pid_t rc = wait4(child.pid, &status, WNOHANG, &usage);
    if (rc == child.pid) {
      child.pid = -1;
      child.peak_rss_kb = usage.ru_maxrss;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return std::nullopt;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-child.pid, SIGKILL);
      waitpid(child.pid, &status, 0);
      child.pid = -1;
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Finished run_to_end(const std::vector<std::string>& args, const fs::path& out, std::chrono::milliseconds timeout) {
  Child child = spawn(args, out);
  const auto code = wait_exit(child, timeout);
  return {code, slurp(out), child.peak_rss_kb};
}

nlohmann::json status_of(const fs::path& dir) {
  try {
    return nlohmann::json::parse(slurp(dir / "status.json"));
  } catch (...) {
    return nlohmann::json::object();
  }
}

bool reached_step(const fs::path& dir, std::int64_t step) {
  const auto s = status_of(dir);
  return s.contains("step") && s["step"].get<std::int64_t>() >= step;
}

bool in_state(const fs::path& dir, const std::string& state) {
  const auto s = status_of(dir);
  return s.contains("state") && s["state"] == state;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
  return true;
}

bool wait_for_step(const fs::path& dir, std::int64_t step, std::chrono::milliseconds timeout) {
  return wait_until([&] { return reached_step(dir, step); }, timeout);
}

bool wait_for_state(const fs::path& dir, const std::string& state, std::chrono::milliseconds timeout) {
  return wait_until([&] { return in_state(dir, state); }, timeout);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

double cpu_seconds(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  // Fields after the command: state(3) ... utime(14) stime(15); we start at field 3.
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

bool process_group_alive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno == EPERM; }

char process_state(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("free_port: no socket");
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

ScopedEnv::ScopedEnv(const std::map<std::string, std::optional<std::string>>& vars) {
  for (const auto& [name, value] : vars) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
}

ScopedEnv::~ScopedEnv() {
  for (const auto& [name, value] : saved_) {
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
}

std::optional<std::string> torchrun_missing() {
  static const bool have = std::system("/usr/bin/python3 -c 'import torch.distributed.run' >/dev/null 2>&1") == 0;
  if (have) return std::nullopt;
  return std::string("skipped: /usr/bin/python3 cannot import torch.distributed.run (install python3-torch)");
}

std::optional<std::string> cuda_missing() {
  if (lifecycle::cuda_usable()) return std::nullopt;
  return std::string("skipped: no CUDA device (") + (lifecycle::built_with_cuda() ? "none visible" : "a CPU build") +
         ")";
}

}  // namespace yolotrain::test
