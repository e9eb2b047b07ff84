#pragma once

// A plain HTTP/1.1 client for the control endpoint's tests: POSIX sockets only (header-only), so a
// test can send exactly the bytes it wants — a normal request, a trickle, 10,000 headers, a body
// announced at 100 MB — and hold many connections open.
//
//   auto r = yolotrain::test::http_request(port, "POST", "/v1/pause?wait=30", "the-token");
//   CHECK(r.status == 200);  CHECK(r.json()["state"] == "paused");

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace yolotrain::test {

struct HttpResponse {
  int status = 0;       ///< 0: no response (refused, cut off, timed out)
  std::string headers;  ///< the status line and headers
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

/// A TCP connection to `host`:`port`, or -1.
inline int http_connect(int port, const std::string& host = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends all of `bytes` (false if the peer closed first).
inline bool http_send(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

/// A chunked body's content (what a Go server sends for a long answer).
inline std::string http_dechunk(const std::string& chunked) {
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const auto eol = chunked.find("\r\n", at);
    if (eol == std::string::npos) break;
    const std::size_t size = std::strtoul(chunked.c_str() + at, nullptr, 16);
    if (size == 0 || eol + 2 + size > chunked.size()) break;
    out += chunked.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  return out;
}

/// Reads until the peer closes or `timeout` passes; parses the first response in what came.
inline HttpResponse http_read(int fd, std::chrono::milliseconds timeout) {
  std::string in;
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
  }
  HttpResponse r;
  const auto end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return r;
  r.status = std::atoi(in.c_str() + 9);
  r.headers = in.substr(0, end);
  r.body = in.substr(end + 4);
  if (r.headers.find("Transfer-Encoding: chunked") != std::string::npos) r.body = http_dechunk(r.body);
  return r;
}

/// Sends `raw` on a new connection and reads the response (requests say Connection: close).
inline HttpResponse http_raw(int port, const std::string& raw,
                             std::chrono::milliseconds timeout = std::chrono::seconds(60),
                             const std::string& host = "127.0.0.1") {
  const int fd = http_connect(port, host);
  if (fd < 0) return {};
  http_send(fd, raw);
  HttpResponse r = http_read(fd, timeout);
  ::close(fd);
  return r;
}

/// METHOD `target` with a bearer token when one is given.
inline HttpResponse http_request(int port, const std::string& method, const std::string& target,
                                 const std::string& token = "",
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60),
                                 const std::string& host = "127.0.0.1") {
  std::string raw = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  if (!token.empty()) raw += "Authorization: Bearer " + token + "\r\n";
  if (method == "POST") raw += "Content-Length: 0\r\n";
  return http_raw(port, raw + "\r\n", timeout, host);
}

}  // namespace yolotrain::test
