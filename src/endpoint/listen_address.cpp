#include "yolotrain/endpoint/listen_address.hpp"

#include <arpa/inet.h>

#include <cstdlib>

#include "yolotrain/error.hpp"

namespace yolotrain::endpoint {
namespace {

bool is_ipv6(const std::string& host) {
  in6_addr a{};
  return inet_pton(AF_INET6, host.c_str(), &a) == 1;
}

bool is_ipv4(const std::string& host) {
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1;
}

}  // namespace

bool ListenAddress::loopback() const {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string ListenAddress::text() const {
  return (is_ipv6(host) ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ListenAddress parse_listen_address(const std::string& text) {
  const std::string how = " (write HOST:PORT: 127.0.0.1:8080, 0.0.0.0:8080, [::1]:8080; port 0: any free one)";
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw Error("'" + text + "' has no port" + how);
  ListenAddress a;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (!host.empty()) a.host = host;
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    throw Error("'" + text + "': the port must be a number from 0 to 65535" + how);
  }
  a.port = static_cast<int>(p);
  if (a.host != "localhost" && !is_ipv4(a.host) && !is_ipv6(a.host)) {
    throw Error("'" + text + "': '" + a.host + "' is not an IP address" + how);
  }
  return a;
}

}  // namespace yolotrain::endpoint
