#pragma once

// A real S3 API server for the S3 client tests: s3rver 3.7.1 (npm, installed by
// scripts/install-deps.sh into tests/s3rver/node_modules) run by node, tests/s3rver/fault_proxy.js
// in front of it to inject failures, and Debian's aws CLI as an independent client to cross-check
// with. What s3rver does and does not check: tests/s3rver/README.md.
//
// Header-only and standalone (POSIX and the C++17 library only): a test includes it without
// linking anything else. Every process it starts runs in its own process group, gets SIGKILL if
// the test process dies (PR_SET_PDEATHSIG), and is stopped and reaped by its owner's destructor.
//
//   if (auto why = yolotrain::test::S3Server::unavailable()) { WARN("S3 test skipped: " << *why); return; }
//   yolotrain::test::S3Server s3("bucket");          // http://127.0.0.1:PORT, path-style, S3RVER/S3RVER
//   yolotrain::test::FaultProxy proxy(s3);           // the client talks to proxy.endpoint()
//   proxy.set_5xx(2);                                 // the next 2 requests answer 503 SlowDown
//   auto r = yolotrain::test::aws_cli(s3, {"s3", "ls", "--recursive", "s3://bucket/"});

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

// The folder with package.json, node_modules and fault_proxy.js: the tests' compile definition of
// the source tree (tests/CMakeLists.txt), unless the includer names it.
#ifndef YOLOTRAIN_S3RVER_DIR
#ifdef YOLOTRAIN_SOURCE_DIR
#define YOLOTRAIN_S3RVER_DIR YOLOTRAIN_SOURCE_DIR "/tests/s3rver"
#else
#error "s3_server.hpp needs YOLOTRAIN_SOURCE_DIR (the source tree) or YOLOTRAIN_S3RVER_DIR (tests/s3rver)"
#endif
#endif

namespace yolotrain::test {

namespace s3_detail {

using namespace std::chrono_literals;

/// The folder with s3rver's node_modules and fault_proxy.js.
inline std::filesystem::path s3rver_dir() { return YOLOTRAIN_S3RVER_DIR; }

/// `program`'s path: itself when it names a path, else the first executable of that name on PATH;
/// "" when there is none.
inline std::string which(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

inline std::string slurp(const std::filesystem::path& path, std::uintmax_t from = 0) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(from));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::uintmax_t file_size_or_0(const std::filesystem::path& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

/// The last `n` characters of `text` (for error messages).
inline std::string tail(const std::string& text, std::size_t n = 4000) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

/// A fresh folder under $TMPDIR (or /tmp).
inline std::filesystem::path make_temp_dir(const std::string& stem) {
  const char* t = std::getenv("TMPDIR");
  std::string pattern = std::string(t != nullptr && *t != '\0' ? t : "/tmp") + "/" + stem + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary folder " + pattern + ": " + std::strerror(errno));
  }
  return buf.data();
}

/// This process's environment with `changes` applied (a value sets, nothing removes).
inline std::vector<std::string> environment_with(const std::map<std::string, std::optional<std::string>>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (changes.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : changes) {
    if (value) env.push_back(name + "=" + *value);
  }
  return env;
}

inline std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// Starts `argv` (argv[0] a path) in its own process group, stdin from /dev/null, stdout and
/// stderr to `out_fd` (or, when out_fd < 0, appended to the file `log`), with `env` (this
/// process's environment when empty). It gets SIGKILL when the thread that started it ends.
inline pid_t spawn(std::vector<std::string> argv, const std::filesystem::path& log, int out_fd = -1,
                   std::vector<std::string> env = {}) {
  if (env.empty()) env = environment_with({});
  // Everything the child needs is made before fork: after it, only async-signal-safe calls.
  std::vector<char*> cargv = c_strings(argv), cenv = c_strings(env);
  const std::string log_path = log.string();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = out_fd >= 0 ? out_fd : ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    if (::close_range(3, ~0U, 0) != 0) {
      for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    }
    ::execve(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "s3_server.hpp: execve failed\n";
    [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before anyone signals it
  return pid;
}

/// True once `pid` has ended (it is then a zombie, not reaped yet: its process group id cannot be
/// taken by another process), or is not our child.
inline bool has_ended(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid;
}

/// SIGKILLs what is left of the group of `pid` (ended, not reaped) and reaps `pid`: its exit code,
/// 128+signal when a signal ended it, -1 when it was not our child.
inline int reap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (r != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Signals the group of `pid` with `sig`, waits up to `grace` for `pid` to end, then SIGKILLs the
/// group and reaps `pid`. `pid` becomes -1. Never throws.
inline void stop(pid_t& pid, int sig, std::chrono::milliseconds grace) noexcept {
  if (pid <= 0) return;
  ::kill(-pid, sig);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!has_ended(pid) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  reap(pid);
  pid = -1;
}

/// What a program printed and how it ended.
struct Captured {
  int code = -1;       ///< exit code, 128+signal, or -1 on timeout (then it was killed)
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs `argv` (argv[0] a path) to its end, at most `timeout`.
inline Captured run_capture(const std::vector<std::string>& argv, std::vector<std::string> env,
                            std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  pid_t pid = -1;
  try {
    pid = spawn(argv, "/dev/null", fds[1], std::move(env));
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  Captured r;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  char buf[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: every holder of the pipe ended
    r.output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) {
    stop(pid, SIGKILL, 0ms);
    r.code = -1;
    r.output += "\n[s3_server.hpp: killed after " + std::to_string(timeout.count()) + " ms]";
    return r;
  }
  r.code = reap(pid);
  return r;
}

/// One HTTP/1.1 request to 127.0.0.1:`port` (Connection: close): the status and the body.
inline std::pair<int, std::string> http_request(int port, const std::string& method, const std::string& target,
                                                const std::string& body = "",
                                                std::chrono::milliseconds timeout = 10s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket failed: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // also bounds connect on Linux
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string where = method + " http://127.0.0.1:" + std::to_string(port) + target;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error(where + ": connect failed: " + std::strerror(errno));
  }
  const std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(where + ": send failed: " + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(where + ": no answer: " + std::strerror(errno));
    if (n == 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody" (the control channel answers with Content-Length, not chunked)
  const auto head_end = response.find("\r\n\r\n");
  if (response.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos ||
      response.find(' ') == std::string::npos) {
    throw std::runtime_error(where + ": not an HTTP answer: " + tail(response, 500));
  }
  const int status = std::atoi(response.c_str() + response.find(' ') + 1);
  return {status, response.substr(head_end + 4)};
}

/// True once something accepts a TCP connection on 127.0.0.1:`port`.
inline bool port_open(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

/// Waits until `log` (from byte `from` on) holds a line starting with `marker` followed by the
/// port, or `pid` ends, or `timeout` passes: the port; throws with the log otherwise.
inline int wait_ready(const std::string& what, pid_t& pid, const std::filesystem::path& log, std::uintmax_t from,
                      const std::string& marker, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::string text = slurp(log, from);
    const auto at = text.find(marker);
    if (at != std::string::npos) {
      const auto eol = text.find('\n', at);
      if (eol != std::string::npos) {
        const std::string line = text.substr(at + marker.size(), eol - at - marker.size());
        const auto colon = line.rfind(':');
        const int port = std::atoi(line.c_str() + (colon == std::string::npos ? 0 : colon + 1));
        if (port > 0 && port_open(port)) return port;
      }
    }
    if (has_ended(pid)) {
      const int code = reap(pid);
      pid = -1;
      throw std::runtime_error(what + " exited (code " + std::to_string(code) + ") before it was ready; its log " +
                               log.string() + ":\n" + tail(slurp(log, from)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      stop(pid, SIGKILL, 0ms);
      throw std::runtime_error(what + " was not ready after " + std::to_string(timeout.count()) +
                               " ms; its log " + log.string() + ":\n" + tail(slurp(log, from)));
    }
    std::this_thread::sleep_for(20ms);
  }
}

/// node's path, or "" when there is none.
inline const std::string& node_path() {
  static const std::string path = which("node");
  return path;
}

/// node's extra options for s3rver: s3rver makes ListObjectsV2 continuation tokens with DES,
/// which OpenSSL 3 (node >= 17) has only in its legacy provider. Nothing when node cannot do DES.
inline const std::optional<std::vector<std::string>>& node_des_options() {
  static const std::optional<std::vector<std::string>> options = []() -> std::optional<std::vector<std::string>> {
    if (node_path().empty()) return std::nullopt;
    const std::string des = "require('crypto').createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8))";
    for (std::vector<std::string> extra :
         {std::vector<std::string>{}, std::vector<std::string>{"--openssl-legacy-provider"}}) {
      std::vector<std::string> argv{node_path()};
      argv.insert(argv.end(), extra.begin(), extra.end());
      argv.insert(argv.end(), {"-e", des});
      if (run_capture(argv, {}, 20s).code == 0) return extra;
    }
    return std::nullopt;
  }();
  return options;
}

}  // namespace s3_detail

/// An s3rver on 127.0.0.1 (path-style: http://127.0.0.1:PORT/bucket/key), its data in a fresh
/// temporary folder with `bucket` made at start. Stopped (SIGTERM, then SIGKILL after 5 s) and
/// the folder removed on destruction.
class S3Server {
 public:
  /// Why s3rver cannot run here (node or the npm package missing), or nothing when it can.
  static std::optional<std::string> unavailable() {
    if (s3_detail::node_path().empty()) return "node is not installed (apt-get install nodejs)";
    if (!std::filesystem::exists(script())) {
      return "s3rver is not installed (scripts/install-deps.sh, or npm ci --ignore-scripts in " +
             s3_detail::s3rver_dir().string() + ")";
    }
    if (!s3_detail::node_des_options()) {
      return "node " + s3_detail::node_path() + " cannot use DES even with --openssl-legacy-provider "
             "(s3rver's ListObjectsV2 continuation tokens)";
    }
    return std::nullopt;
  }

  /// Starts s3rver with `bucket` made; throws std::runtime_error (with s3rver's log) when it is
  /// not answering within `timeout`.
  explicit S3Server(std::string bucket = "yolotrain-test",
                    std::chrono::milliseconds timeout = std::chrono::seconds(20))
      : bucket_(std::move(bucket)), timeout_(timeout) {
    if (auto why = unavailable()) throw std::runtime_error("S3Server: " + *why);
    dir_ = s3_detail::make_temp_dir("yolotrain-s3rver");
    try {
      start();
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      throw;
    }
  }
  ~S3Server() {
    s3_detail::stop(pid_, SIGTERM, std::chrono::seconds(5));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  int port() const { return port_; }
  /// "http://127.0.0.1:PORT".
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& bucket() const { return bucket_; }
  /// s3rver's one account ("S3RVER"/"S3RVER"); other key ids get 403 InvalidAccessKeyId.
  static std::string access_key() { return "S3RVER"; }
  static std::string secret_key() { return "S3RVER"; }
  static std::string region() { return "us-east-1"; }
  /// The folder s3rver keeps its buckets in (<bucket>/<key>._S3rver_object and its metadata).
  std::filesystem::path data_dir() const { return dir_ / "data"; }
  /// s3rver's stdout and stderr, all its starts.
  std::filesystem::path log_path() const { return dir_ / "s3rver.log"; }
  std::string log() const { return s3_detail::slurp(log_path()); }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  /// SIGKILLs the server (a crash: nothing flushed, connections reset) and reaps it.
  void kill() { s3_detail::stop(pid_, SIGKILL, std::chrono::milliseconds(0)); }
  /// Stops the server (SIGTERM) if it runs, then starts it again on the same port and folder:
  /// what was stored is still there.
  void restart() {
    s3_detail::stop(pid_, SIGTERM, std::chrono::seconds(5));
    start();
  }

 private:
  static std::filesystem::path script() {
    return s3_detail::s3rver_dir() / "node_modules" / "s3rver" / "bin" / "s3rver.js";
  }

  void start() {
    std::vector<std::string> argv{s3_detail::node_path()};
    const auto& extra = *s3_detail::node_des_options();
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {script().string(), "--directory", data_dir().string(), "--address", "127.0.0.1",
                             "--port", std::to_string(port_), "--no-vhost-buckets", "--configure-bucket", bucket_});
    const auto from = s3_detail::file_size_or_0(log_path());
    pid_ = s3_detail::spawn(argv, log_path());
    port_ = s3_detail::wait_ready("s3rver", pid_, log_path(), from, "S3rver listening on ", timeout_);
  }

  std::string bucket_;
  std::chrono::milliseconds timeout_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;  ///< 0 until the first start: s3rver then picks a free port, kept for restarts
};

/// tests/s3rver/fault_proxy.js on 127.0.0.1 in front of a server: forwards every request as it
/// came (Host included) and fails those the test asks it to. Stopped on destruction.
class FaultProxy {
 public:
  /// Why the proxy cannot run here, or nothing when it can.
  static std::optional<std::string> unavailable() {
    if (s3_detail::node_path().empty()) return "node is not installed (apt-get install nodejs)";
    if (!std::filesystem::exists(script())) return "no " + script().string();
    return std::nullopt;
  }

  explicit FaultProxy(const S3Server& server, std::chrono::milliseconds timeout = std::chrono::seconds(20))
      : FaultProxy(server.port(), timeout) {}
  explicit FaultProxy(int target_port, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    if (auto why = unavailable()) throw std::runtime_error("FaultProxy: " + *why);
    dir_ = s3_detail::make_temp_dir("yolotrain-fault-proxy");
    try {
      pid_ = s3_detail::spawn({s3_detail::node_path(), script().string(), "--target",
                               "127.0.0.1:" + std::to_string(target_port)},
                              log_path());
      port_ = s3_detail::wait_ready("fault_proxy.js", pid_, log_path(), 0, "listening ", timeout);
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      throw;
    }
  }
  ~FaultProxy() {
    s3_detail::stop(pid_, SIGTERM, std::chrono::seconds(5));
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  /// "http://127.0.0.1:PORT": what the client under test talks to.
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::filesystem::path log_path() const { return dir_ / "fault_proxy.log"; }
  std::string log() const { return s3_detail::slurp(log_path()); }

  /// The next `n` requests (of `methods`, e.g. {"PUT"}; every method when empty) answer `status`
  /// (503 SlowDown, or 500 InternalError) with S3's XML error body, their body read first.
  void set_5xx(int n, int status = 503, const std::vector<std::string>& methods = {}) {
    fault("{\"status5xx\":" + std::to_string(n) + ",\"status\":" + std::to_string(status) +
          ",\"methods\":" + methods_json(methods) + "}");
  }
  /// The next `n` requests (of `methods`) get their connection closed without an answer.
  void set_drop(int n, const std::vector<std::string>& methods = {}) {
    fault("{\"drop\":" + std::to_string(n) + ",\"methods\":" + methods_json(methods) + "}");
  }
  /// Every request waits `ms` before it is forwarded (or failed): a slow server. 0: no delay.
  void set_delay_ms(int ms) { fault("{\"delay_ms\":" + std::to_string(ms) + "}"); }
  /// Back to plain forwarding (the counts of stats() stay).
  void reset() { fault("{\"reset\":true}"); }
  /// The counts of stats() back to 0.
  void reset_stats() { fault("{\"reset_stats\":true}"); }
  /// POSTs `json` to /__fault as it is (fault_proxy.js lists the keys); its answer (the settings).
  std::string fault(const std::string& json) {
    auto [status, body] = s3_detail::http_request(port_, "POST", "/__fault", json);
    if (status != 200) throw std::runtime_error("fault_proxy.js refused " + json + ": " + body);
    return body;
  }
  /// GET /__stats: {"requests":..,"forwarded":..,"injected_5xx":..,"dropped":..,
  /// "upstream_errors":..,"aborted":..,"methods":{"GET":..},"faults":{...}} (control requests
  /// not counted).
  std::string stats() const {
    auto [status, body] = s3_detail::http_request(port_, "GET", "/__stats");
    if (status != 200) throw std::runtime_error("fault_proxy.js /__stats answered " + std::to_string(status));
    return body;
  }
  /// One count of stats(): a top-level name ("forwarded") or a method ("PUT"); 0 when absent.
  long stat(const std::string& name) const {
    const std::string text = stats(), key = "\"" + name + "\":";
    const auto at = text.find(key);
    return at == std::string::npos ? 0 : std::strtol(text.c_str() + at + key.size(), nullptr, 10);
  }

 private:
  static std::filesystem::path script() { return s3_detail::s3rver_dir() / "fault_proxy.js"; }
  static std::string methods_json(const std::vector<std::string>& methods) {
    if (methods.empty()) return "null";
    std::string out = "[";
    for (const auto& m : methods) out += (out.size() > 1 ? ",\"" : "\"") + m + "\"";
    return out + "]";
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

/// Debian's aws CLI (/usr/bin/aws, awscli 2.9; a PATH aws, as from pyenv, only when it is not
/// there), or "" when there is none.
inline const std::string& aws_cli_path() {
  static const std::string path = [] {
    if (::access("/usr/bin/aws", X_OK) == 0) return std::string("/usr/bin/aws");
    return s3_detail::which("aws");
  }();
  return path;
}

/// True when aws_cli() can run (`aws --version` works).
inline bool has_aws_cli() {
  static const bool ok = !aws_cli_path().empty() &&
                         s3_detail::run_capture({aws_cli_path(), "--version"}, {}, std::chrono::seconds(60)).code == 0;
  return ok;
}

/// What one aws call returned.
struct AwsCliResult {
  int code = -1;       ///< exit code: 0 ok; awscli 2.9: 254 an S3 error answer (s3api, s3 ls), 1 a failed
                       ///< s3 cp/rm, 255 no connection; -1 killed after the timeout
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs `aws --endpoint-url <endpoint> <args...>` with the given credentials, region us-east-1,
/// and no config, credentials file, profile or pager of the user's. `s3 cp` prints progress
/// unless args say --no-progress (or --only-show-errors).
inline AwsCliResult aws_cli(const std::string& endpoint, const std::vector<std::string>& args,
                            const std::string& access_key = S3Server::access_key(),
                            const std::string& secret_key = S3Server::secret_key(),
                            std::chrono::milliseconds timeout = std::chrono::minutes(2)) {
  if (aws_cli_path().empty()) return {127, "aws is not installed (apt-get install awscli)"};
  std::vector<std::string> argv{aws_cli_path(), "--endpoint-url", endpoint};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = s3_detail::environment_with({
      {"AWS_ACCESS_KEY_ID", access_key},
      {"AWS_SECRET_ACCESS_KEY", secret_key},
      {"AWS_DEFAULT_REGION", S3Server::region()},
      {"AWS_REGION", S3Server::region()},
      {"AWS_CONFIG_FILE", std::string("/dev/null")},
      {"AWS_SHARED_CREDENTIALS_FILE", std::string("/dev/null")},
      {"AWS_PAGER", std::string("")},
      {"AWS_EC2_METADATA_DISABLED", std::string("true")},
      {"AWS_PROFILE", std::nullopt},
      {"AWS_DEFAULT_PROFILE", std::nullopt},
      {"AWS_SESSION_TOKEN", std::nullopt},
      {"AWS_ENDPOINT_URL", std::nullopt},
      {"AWS_CA_BUNDLE", std::nullopt},
  });
  auto r = s3_detail::run_capture(argv, std::move(env), timeout);
  return {r.code, std::move(r.output)};
}

/// aws_cli against `server` (its endpoint and account).
inline AwsCliResult aws_cli(const S3Server& server, const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout = std::chrono::minutes(2)) {
  return aws_cli(server.endpoint(), args, S3Server::access_key(), S3Server::secret_key(), timeout);
}

}  // namespace yolotrain::test
