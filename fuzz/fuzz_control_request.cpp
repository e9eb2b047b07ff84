// libFuzzer target: one HTTP request, as bytes, to a live endpoint::ControlServer — libmicrohttpd's
// request parser (Debian's library: not instrumented, a crash in it still shows) and ours behind it
// (instrumented): routing, the token check, the limits, `?wait=`. libmicrohttpd offers a seam for
// sockets made elsewhere (MHD_add_connection); a loopback connection to the server as it runs in a
// training process reaches the same code and needs none.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "yolotrain/endpoint/control_server.hpp"

namespace {

struct Endpoint {
  yolotrain::lifecycle::ControlToken token;
  yolotrain::lifecycle::RunStatus status{""};
  std::unique_ptr<yolotrain::endpoint::ControlServer> server;
  Endpoint() {
    yolotrain::endpoint::ControlServerOptions o;
    o.token = "fuzz-token";
    o.request_timeout = std::chrono::milliseconds(500);
    o.max_wait = std::chrono::seconds(1);
    server = std::make_unique<yolotrain::endpoint::ControlServer>(token, o);
    server->attach(status);
    status.set_state(yolotrain::lifecycle::RunState::Running);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Endpoint endpoint;
  endpoint.token.reset();  // a request that paused the run must not make the next one wait
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(endpoint.server->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) __builtin_trap();  // the server died
  for (std::size_t sent = 0; sent < size;) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  // The first answer, if one comes soon (libmicrohttpd's edge-triggered epoll may not see the end of
  // a request cut short until request_timeout; the server copes, the fuzzer need not wait for it).
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 20) > 0) [[maybe_unused]] auto n = ::recv(fd, buf, sizeof(buf), 0);
  ::close(fd);
  return 0;
}
