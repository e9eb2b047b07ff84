#include "listen_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "yolotrain/endpoint/control_server.hpp"

namespace yolotrain::endpoint::detail {
namespace {

constexpr std::size_t kFilesForTheRun = 512;  // checkpoints, loaders, logs, libraries, the GPU driver

std::string why_not(const ListenAddress& a, int err) {
  const std::string where = "control=" + a.text();
  switch (err) {
    case EADDRINUSE:
      return where + ": the port is in use (ss -ltnp 'sport = :" + std::to_string(a.port) +
             "' names the process listening there); choose another port, or port 0 for any free one";
    case EADDRNOTAVAIL:
      return where + ": " + a.host + " is not an address of this machine (ip -brief address lists them; "
             "0.0.0.0 listens on all)";
    case EACCES:
      return where + ": ports below 1024 need root (or CAP_NET_BIND_SERVICE); choose a port from 1024 up";
    default: return where + ": cannot listen: " + std::strerror(err);
  }
}

}  // namespace

int open_listen_socket(const ListenAddress& address) {
  sockaddr_storage storage{};
  socklen_t size = 0;
  const std::string host = address.host == "localhost" ? "127.0.0.1" : address.host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(address.port));
    size = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(address.port));
    size = sizeof(sockaddr_in6);
  } else {
    throw ListenError("control=" + address.text() + ": '" + address.host + "' is not an IP address");
  }
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ListenError(why_not(address, errno));
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));  // a restarted run takes its port back at once
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), size) != 0 || listen(fd, SOMAXCONN) != 0) {
    const int err = errno;
    close(fd);
    throw ListenError(why_not(address, err));
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage storage{};
  socklen_t size = sizeof(storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &size) != 0) return 0;
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

std::size_t make_room_for_connections(std::size_t connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return connections;
  const rlim_t wanted = static_cast<rlim_t>(connections + kFilesForTheRun);
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted) return connections;
  return limit.rlim_cur > kFilesForTheRun + 16 ? static_cast<std::size_t>(limit.rlim_cur) - kFilesForTheRun : 16;
}

}  // namespace yolotrain::endpoint::detail
