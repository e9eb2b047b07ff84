#pragma once
// Where a control endpoint listens, from the text a user writes (control=HOST:PORT).
#include <string>

namespace yolotrain::endpoint {

/// An address to listen on: an IPv4 address (127.0.0.1, 0.0.0.0, 10.0.0.2), `localhost`, or an
/// IPv6 address in brackets ([::1], [::]); a port, 0 meaning any free one.
struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 0;

  /// Reachable from this machine only (127.0.0.0/8, ::1, localhost): the one kind of address a
  /// control endpoint may use without a bearer token.
  bool loopback() const;
  /// "HOST:PORT" as written back ("[::1]:8080" for IPv6).
  std::string text() const;
};

/// Parses "HOST:PORT" (or ":PORT", meaning 127.0.0.1). Throws yolotrain::Error saying what is
/// wrong and what to write.
ListenAddress parse_listen_address(const std::string& text);

}  // namespace yolotrain::endpoint
