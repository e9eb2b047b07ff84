#pragma once
// The control endpoint's listening socket, opened here rather than by libmicrohttpd so that a
// failure says which address and why (a port in use, an address not of this machine).
#include <cstddef>

#include "yolotrain/endpoint/listen_address.hpp"

namespace yolotrain::endpoint::detail {

/// A socket bound to `address` and listening (close-on-exec, SO_REUSEADDR). Throws ListenError.
int open_listen_socket(const ListenAddress& address);
/// The port `fd` is bound to.
int bound_port(int fd);
/// Raises this process's open-files limit (soft, up to the hard one) so that `connections` more
/// sockets fit beside what the run opens; returns how many fit (fewer when the hard limit is low).
std::size_t make_room_for_connections(std::size_t connections);

}  // namespace yolotrain::endpoint::detail
