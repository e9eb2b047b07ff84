// Prints what the control endpoint costs a training step (custom_loop, in this process): without
// it, with it idle, and with it under a flood from another process — 500 connections held open,
// two clients trickling a byte every 100 ms, and 50 abusive requests a second (a 100 MB body
// announced, 10,000 headers, wrong tokens) — alternated, several rounds; and how long a legitimate
// GET /v1/status takes meanwhile. Figures only; nothing here asserts a time.
//   build/bench/control_bench [rounds=3] [steps=300]
#include <ATen/ATen.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "custom_loop.hpp"
#include "http_client.hpp"

extern char** environ;

namespace fs = std::filesystem;
namespace yt = yolotrain::test;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

const char* kToken = "bench-token-0123456789";

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("yolotrain-control-bench-" + std::to_string(getpid())) / name;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p);
  return p;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  ::close(fd);
  return ntohs(a.sin_port);
}

// The flood, in its own process (`control_bench --flood PORT`), until killed.
[[noreturn]] void flood(int port) {
  std::vector<int> idle;
  std::vector<std::thread> trickles;
  for (int i = 0; i < 2; ++i) {
    trickles.emplace_back([port] {
      for (;;) {
        const int fd = yt::http_connect(port);
        while (fd >= 0 && yt::http_send(fd, "G")) std::this_thread::sleep_for(100ms);
        if (fd >= 0) ::close(fd);
      }
    });
  }
  std::string headers = "GET /v1/status HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 10000; ++i) headers += "X-" + std::to_string(i) + ": v\r\n";
  const std::vector<std::string> abuse = {
      "POST /v1/stop HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", headers + "\r\n",
      "POST /v1/stop HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Length: 0\r\n\r\n",
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"};
  for (std::size_t n = 0;; ++n) {
    while (idle.size() < 500) {  // the server closes idle ones after 10 s: open them again
      const int fd = yt::http_connect(port);
      if (fd < 0) break;
      idle.push_back(fd);
    }
    yt::http_raw(port, abuse[n % abuse.size()], 2s);
    std::this_thread::sleep_for(20ms);  // 50 a second
    if (n % 250 == 0) {  // every 5 s: drop the connections the server closed
      for (auto& fd : idle) {
        char c;
        if (::recv(fd, &c, 1, MSG_DONTWAIT) == 0) {
          ::close(fd);
          fd = -1;
        }
      }
      idle.erase(std::remove(idle.begin(), idle.end(), -1), idle.end());
    }
  }
}

struct Round {
  double step_ms = 0;
  std::vector<double> status_ms;  // legitimate GET /v1/status while it trained
};

// One custom_loop run of `steps`: with the endpoint (on `port`) or without, flooded or not.
Round train(const std::string& mode, int port, std::int64_t steps, const fs::path& token_file) {
  custom_loop::Options o;
  o.dir = fresh_dir(mode);
  o.steps = steps;
  o.batch = 32;
  o.save_interval_s = 0;
  o.quiet = true;
  if (mode != "none") {
    o.control = "127.0.0.1:" + std::to_string(port);
    o.control_token_file = token_file.string();
  }
  pid_t flooder = -1;
  if (mode == "flood") {
    const std::string self = fs::read_symlink("/proc/self/exe").string(), p = std::to_string(port);
    std::vector<char*> argv = {const_cast<char*>(self.c_str()), const_cast<char*>("--flood"),
                               const_cast<char*>(p.c_str()), nullptr};
    std::thread starter([&] {  // after the server listens
      while (yt::http_request(port, "GET", "/healthz", "", 1s).status != 200) std::this_thread::sleep_for(5ms);
      posix_spawn(&flooder, argv[0], nullptr, nullptr, argv.data(), environ);
    });
    starter.detach();
  }
  Round r;
  std::atomic<bool> done{false};
  std::thread probe([&] {  // a legitimate client, every 100 ms
    while (!done) {
      const auto t = Clock::now();
      if (mode != "none" && yt::http_request(port, "GET", "/v1/status", kToken, 5s).status == 200) {
        r.status_ms.push_back(ms_since(t));
      }
      std::this_thread::sleep_for(100ms);
    }
  });
  yolotrain::lifecycle::ControlToken token;
  std::ostringstream log;
  const auto t = Clock::now();
  custom_loop::train(o, token, log);
  r.step_ms = ms_since(t) / static_cast<double>(steps);
  done = true;
  probe.join();
  if (flooder > 0) {
    kill(flooder, SIGKILL);
    waitpid(flooder, nullptr, 0);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--flood") flood(std::atoi(argv[2]));
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::int64_t steps = argc > 2 ? std::atoll(argv[2]) : 300;
  const fs::path token_file = fresh_dir("token") / "token";
  std::ofstream(token_file) << kToken << "\n";
  const int port = free_port();
  train("none", port, 30, token_file);  // warm-up
  std::map<std::string, std::vector<double>> steps_ms, status_ms;
  for (int i = 0; i < rounds; ++i) {
    for (const std::string mode : {"none", "idle", "flood"}) {
      const Round r = train(mode, port, steps, token_file);
      steps_ms[mode].push_back(r.step_ms);
      status_ms[mode].insert(status_ms[mode].end(), r.status_ms.begin(), r.status_ms.end());
      std::printf("round %d %-5s: %.3f ms per step%s\n", i + 1, mode.c_str(), r.step_ms,
                  r.status_ms.empty()
                      ? ""
                      : (", GET /v1/status median " + std::to_string(median(r.status_ms)) + " ms, max " +
                         std::to_string(*std::max_element(r.status_ms.begin(), r.status_ms.end())) + " ms (" +
                         std::to_string(r.status_ms.size()) + " answered)")
                            .c_str());
    }
  }
  for (const std::string mode : {"none", "idle", "flood"}) {
    std::printf("%-5s: median step %.3f ms over %d rounds of %lld steps\n", mode.c_str(), median(steps_ms[mode]),
                rounds, static_cast<long long>(steps));
  }
  std::error_code ec;
  fs::remove_all(token_file.parent_path().parent_path(), ec);
}
