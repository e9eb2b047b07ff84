#pragma once

// Helpers for yolotrain's tests: temporary folders, child processes and what they leave behind.

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace yolotrain::test {

/// A string literal's bytes, embedded NULs included.
template <std::size_t N>
std::string literal_bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

/// A fresh folder under $TMPDIR, removed (with its content) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// Removes a folder and everything in it (errors ignored).
void remove_tree(const std::filesystem::path& path);

/// A child process in its own process group, its stdout and stderr going to files.
struct Child {
  pid_t pid = -1;
  std::filesystem::path out;  ///< stdout and stderr, interleaved
  long peak_rss_kb = 0;       ///< the child's peak resident memory, once wait_exit reaped it
};

/// Starts `args` (args[0] is the program path) with stdout+stderr to `out`.
Child spawn(const std::vector<std::string>& args, const std::filesystem::path& out);

/// Waits for the child; returns its exit code, 128+signal if a signal killed it, or nothing
/// after `timeout` (the child is then killed with SIGKILL and reaped).
std::optional<int> wait_exit(Child& child, std::chrono::milliseconds timeout);

/// How a child process ended: its exit code (nothing on timeout) and its output.
struct Finished {
  std::optional<int> code;
  std::string output;
  long peak_rss_kb = 0;  ///< the process's peak resident memory (getrusage's ru_maxrss)
};

/// Runs `args` to the end (killing it after `timeout`), its output going to `out`.
Finished run_to_end(const std::vector<std::string>& args, const std::filesystem::path& out,
                    std::chrono::milliseconds timeout = std::chrono::minutes(5));

/// The run's status.json in `dir` (an empty object while it does not parse yet).
nlohmann::json status_of(const std::filesystem::path& dir);
/// True once status.json in `dir` reports at least `step`.
bool reached_step(const std::filesystem::path& dir, std::int64_t step);
/// True while status.json in `dir` reports `state`.
bool in_state(const std::filesystem::path& dir, const std::string& state);

/// True once `done()` holds, polling every `poll` until `timeout`.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(5));

/// True once status.json in `dir` reports at least `step` (false after `timeout`).
bool wait_for_step(const std::filesystem::path& dir, std::int64_t step,
                   std::chrono::milliseconds timeout = std::chrono::minutes(2));
/// True once status.json in `dir` reports `state` (false after `timeout`).
bool wait_for_state(const std::filesystem::path& dir, const std::string& state,
                    std::chrono::milliseconds timeout = std::chrono::minutes(2));

/// The file's content ("" if it cannot be read).
std::string slurp(const std::filesystem::path& path);

/// Threads of this process (entries of /proc/self/task).
int thread_count();

/// User+system CPU seconds used so far by a process (from /proc/PID/stat).
double cpu_seconds(pid_t pid);

/// True when some process is still in process group `pgid`.
bool process_group_alive(pid_t pgid);
/// The process's state letter in /proc/PID/stat ('T': stopped, 'S': sleeping), or 0 once it is gone.
char process_state(pid_t pid);

/// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close).
int free_port();

/// Sets (or, with nothing, unsets) environment variables; puts the old values back on destruction.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& vars);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// Why torchrun cannot run here (the system python3 lacks torch.distributed.run: install
/// python3-torch), or nothing when it can. Checked once.
std::optional<std::string> torchrun_missing();

/// Why a [cuda] test cannot run here ("skipped: no CUDA device (a CPU build)" or "(none visible)"),
/// or nothing when a CUDA device can be used.
std::optional<std::string> cuda_missing();

}  // namespace yolotrain::test
