#pragma once
// yolotrain::endpoint::ControlServer — a run driven over HTTP: what the signals ask (pause, resume,
// stop, checkpoint), for a scheduler or sidecar that cannot send one, and the run's status and
// Prometheus figures for monitoring (docs/engine.md "Control"). Any loop with a ControlToken and a
// RunStatus can start one beside them; yolo_train starts one for control=HOST:PORT.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "yolotrain/endpoint/listen_address.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::endpoint {

/// The address cannot be listened on (a port in use, an address not of this machine, a port
/// below 1024 without the right): the message names it and says what to do.
struct ListenError : Error {
  using Error::Error;
};

/// How a ControlServer listens and what it accepts.
struct ControlServerOptions {
  ListenAddress address;  ///< default 127.0.0.1, any free port
  /// The bearer token every request but GET /healthz must carry (read_token_file). Required for an
  /// address other than loopback; "" on loopback: no token asked.
  std::string token;
  /// Connections open at once; more are closed as soon as they are accepted. Each costs a socket
  /// (the open-files limit is raised to fit them) and at most max_request_bytes of memory.
  std::size_t max_connections = 1024;
  std::size_t max_request_bytes = 16384;  ///< request line and headers (431 beyond)
  std::size_t max_headers = 100;          ///< header fields (431 beyond)
  std::size_t max_body_bytes = 1024;      ///< a request's body (413 beyond; the endpoints take none)
  /// A connection silent this long is closed.
  std::chrono::milliseconds idle_timeout{10000};
  /// A request must have arrived whole this long after its connection opened (or after the
  /// previous request on it was answered); a client trickling bytes is cut off then.
  std::chrono::milliseconds request_timeout{10000};
  /// The longest `?wait=` a request may ask (400 beyond).
  std::chrono::seconds max_wait{3600};
};

/// An HTTP/1.1 server on a thread of its own (GNU libmicrohttpd, event-driven: a slow or idle
/// client costs a socket, never a thread, so none can stall the others or the training):
///   POST /v1/pause | /v1/resume | /v1/stop | /v1/checkpoint [?wait=SECONDS]
///       sets the request on the token (a stop's reason: StopReason::Remote) and answers at once
///       {"request", "state", "step", "acts_at_step", "reached"}: 202 while not carried out, 200 once
///       it is (with wait=, after waiting up to SECONDS for it: paused, running, stopped, a
///       checkpoint written), 409 when the run has already ended;
///   GET /v1/status   status.json's document;      GET /metrics   the Prometheus text (the
///   textfile's families and names);               GET /healthz   "ok" (no token asked).
/// Anything else: 404 (unknown path) or 405 (known path, other method). A missing or wrong token:
/// 401 with no detail, and the request changes nothing. Requests wait for no lock the training
/// thread holds for long: they read RunStatus and set atomics.
class ControlServer {
 public:
  /// Listens now (ListenError when it cannot; yolotrain::Error for a non-loopback address without
  /// a token). The server answers "starting" until attach() gives it the run's status.
  ControlServer(lifecycle::ControlToken& token, ControlServerOptions options = {});
  /// close(), then frees the server.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  /// The run's status: the state and step the answers report, GET /v1/status and /metrics.
  void attach(lifecycle::RunStatus& status);
  /// The port listened on (the one chosen when the address asked for port 0).
  int port() const;
  /// "http://HOST:PORT".
  std::string url() const;
  /// Answers every waiting request with the state now, lets the answers go out (at most `grace`),
  /// then stops listening. For the end of a run: a `wait=` on a stop learns "stopped".
  void close(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::endpoint
