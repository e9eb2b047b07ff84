#pragma once
// Helpers of the dist tests: a free port, environment variables for one test, two workers.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace yolotrain::test {

/// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close).
inline int free_port() {
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

/// Sets (or, with nothing, unsets) environment variables; puts the old values back on destruction.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// Starts `world` copies of the dist test worker in `mode` on a free port (outputs in `dir`).
inline std::vector<Child> start_workers(const std::string& mode, int world, const std::filesystem::path& dir) {
  const std::string port = std::to_string(free_port());
  std::vector<Child> children;
  for (int r = 0; r < world; ++r)
    children.push_back(spawn({DIST_TEST_WORKER, mode, std::to_string(r), std::to_string(world), port},
                             dir / ("rank" + std::to_string(r) + ".txt")));
  return children;
}

}  // namespace yolotrain::test
