// ControlServer on GNU libmicrohttpd (Debian's libmicrohttpd-dev): chosen over cpp-httplib (Debian's
// 0.11) because it is event-driven — one thread polls every connection with epoll, so a client that
// sends one byte a second or a flood of idle connections costs sockets, not the threads that answer
// the others (cpp-httplib serves each connection on one of a fixed pool of threads: eight slow
// clients stall it) — and because it bounds what we need bounded: connections, the memory of a
// request's line and headers, idle time; and it can suspend a request (`?wait=`) without a thread.
#include "yolotrain/endpoint/control_server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "control_requests.hpp"
#include "listen_socket.hpp"
#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::endpoint {
namespace detail {  // named: ControlServer::Impl holds these

using Clock = std::chrono::steady_clock;

// One request across the handler's calls (libmicrohttpd's con_cls).
struct Request {
  std::size_t body = 0;
  std::optional<detail::Ticket> ticket;
  Clock::time_point wait_until{};
  bool waiting = false;  // suspended until carried out or wait_until
  bool resumed = false;  // the watcher resumed it: answer now
};

// One connection (libmicrohttpd's socket_context): whether a request is in, and since when not.
struct Connection {
  int fd = -1;
  Clock::time_point since = Clock::now();
  bool busy = false;  // a request has arrived whole and is being answered (or waits)
};

struct Reply {
  unsigned code = 200;
  std::string body;
  const char* type = "application/json";
  std::vector<std::pair<const char*, std::string>> headers = {};
};

Reply plain(unsigned code, std::string body, std::vector<std::pair<const char*, std::string>> headers = {}) {
  return Reply{code, std::move(body), "text/plain; charset=utf-8", std::move(headers)};
}

MHD_Result queue(MHD_Connection* c, const Reply& r) {
  MHD_Response* response =
      MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.type);
  for (const auto& [name, value] : r.headers) MHD_add_response_header(response, name, value.c_str());
  const MHD_Result queued = MHD_queue_response(c, r.code, response);
  MHD_destroy_response(response);
  return queued;
}

std::string peer_of(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  char text[INET6_ADDRSTRLEN] = "?";
  if (info == nullptr || info->client_addr == nullptr) return text;
  const sockaddr* a = info->client_addr;
  if (a->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, text, sizeof(text));
  } else if (a->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, text, sizeof(text));
  }
  return text;
}

const char* header(MHD_Connection* c, const char* name) {
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

// The paths served and the method each takes.
const char* method_of(const std::string& path) {
  if (path == "/healthz" || path == "/v1/status" || path == "/metrics") return "GET";
  if (detail::command_for(path)) return "POST";
  return nullptr;
}

}  // namespace detail

using namespace detail;  // NOLINT: this file's own helpers

struct ControlServer::Impl {
  lifecycle::ControlToken& token;
  ControlServerOptions o;
  std::atomic<lifecycle::RunStatus*> status{nullptr};
  int port = 0;
  MHD_Daemon* daemon = nullptr;

  std::mutex mutex;  // guards what follows; the watcher and close() wait on `wake`
  std::condition_variable wake;
  bool closing = false, closed = false;
  std::vector<std::pair<MHD_Connection*, Request*>> waiting;
  std::map<MHD_Connection*, Connection*> connections;
  std::size_t answering = 0;  // resumed requests whose answer has not gone out yet
  std::thread watcher;

  Impl(lifecycle::ControlToken& t, ControlServerOptions options) : token(t), o(std::move(options)) {}
  void start();
  void watch();
  MHD_Result handle(MHD_Connection* c, const std::string& path, const std::string& method, std::size_t* upload_size,
                    Request*& r);
  std::optional<Reply> check(MHD_Connection* c, const std::string& path, const std::string& method) const;
  std::optional<Reply> respond(MHD_Connection* c, const std::string& path, Request& r);
  std::optional<Reply> command(MHD_Connection* c, detail::Command command, Request& r);
  Reply answer(const detail::Ticket& t) const {
    const lifecycle::RunStatus* s = status.load();
    if (t.ended) return Reply{409, detail::answer(t, s)};
    return Reply{detail::reached(t, s) ? 200u : 202u, detail::answer(t, s)};
  }
};

namespace {

MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method, const char* /*version*/,
                      const char* /*upload*/, std::size_t* upload_size, void** con_cls) {
  auto*& r = reinterpret_cast<Request*&>(*con_cls);
  return static_cast<ControlServer::Impl*>(cls)->handle(c, url, method, upload_size, r);
}

void on_completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode /*why*/) {
  auto& s = *static_cast<ControlServer::Impl*>(cls);
  auto* r = static_cast<Request*>(*con_cls);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (r != nullptr && r->resumed && s.answering > 0) --s.answering;
    for (auto it = s.waiting.begin(); it != s.waiting.end(); ++it) {
      if (it->second == r) {
        s.waiting.erase(it);
        break;
      }
    }
    if (const auto it = s.connections.find(c); it != s.connections.end()) {
      it->second->busy = false;
      it->second->since = Clock::now();  // the next request on this connection has its own time
    }
  }
  delete r;
  *con_cls = nullptr;
  s.wake.notify_all();
}

void on_connection(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
  auto& s = *static_cast<ControlServer::Impl*>(cls);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    auto* conn = new Connection;
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn->fd = info != nullptr ? info->connect_fd : -1;
    *socket_context = conn;
    s.connections[c] = conn;
  } else {  // closed: libmicrohttpd closes the socket after telling us, so the watcher never touches a reused fd
    delete static_cast<Connection*>(*socket_context);
    *socket_context = nullptr;
    s.connections.erase(c);
  }
}

// Blocks the lifecycle signals in the calling thread while alive: the threads started meanwhile
// (libmicrohttpd's, the watcher) inherit the mask, so signals land on the program's threads.
struct SignalsBlocked {
  sigset_t previous{};
  SignalsBlocked() {
    pthread_sigmask(SIG_SETMASK, nullptr, &previous);
    lifecycle::block_lifecycle_signals_in_this_thread();
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous, nullptr); }
};

}  // namespace

void ControlServer::Impl::start() {
  if (!o.address.loopback() && o.token.empty()) {
    throw Error("control=" + o.address.text() +
                " listens beyond this machine: give control_token_file=FILE (a bearer token, e.g. a mounted "
                "Kubernetes Secret), or listen on 127.0.0.1");
  }
  const int fd = detail::open_listen_socket(o.address);
  port = detail::bound_port(fd);
  const auto limit = static_cast<unsigned>(detail::make_room_for_connections(o.max_connections));
  const auto idle_s = static_cast<unsigned>(std::max<std::int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(o.idle_timeout).count()));
  SignalsBlocked blocked;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
  if (o.address.host.find(':') != std::string::npos) flags |= MHD_USE_IPv6;
  daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &on_request, this, MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<std::size_t>(o.max_request_bytes),
                            MHD_OPTION_NOTIFY_COMPLETED, &on_completed, this, MHD_OPTION_NOTIFY_CONNECTION,
                            &on_connection, this, MHD_OPTION_END);
  if (daemon == nullptr) {
    ::close(fd);
    throw ListenError("control=" + o.address.text() + ": libmicrohttpd could not start its server");
  }
  watcher = std::thread([this] { watch(); });
}

// Answers the waits carried out (or timed out, or all of them when closing) and cuts off the
// connections whose request has not arrived whole within request_timeout.
void ControlServer::Impl::watch() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!closed) {
    wake.wait_for(lock, std::chrono::milliseconds(100));
    const auto now = Clock::now();
    const lifecycle::RunStatus* s = status.load();
    std::vector<MHD_Connection*> due;
    for (auto it = waiting.begin(); it != waiting.end();) {
      Request& r = *it->second;
      if (closing || now >= r.wait_until || detail::reached(*r.ticket, s)) {
        r.resumed = true;
        ++answering;
        due.push_back(it->first);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    if (!due.empty()) {  // resumed without our lock: libmicrohttpd takes its own
      lock.unlock();
      for (MHD_Connection* c : due) MHD_resume_connection(c);
      lock.lock();
    }
    for (auto& [c, conn] : connections) {
      if (!conn->busy && conn->fd >= 0 && now - conn->since > o.request_timeout) {
        shutdown(conn->fd, SHUT_RDWR);  // libmicrohttpd sees the end and closes it
        conn->fd = -1;
      }
    }
  }
}

MHD_Result ControlServer::Impl::handle(MHD_Connection* c, const std::string& path, const std::string& method,
                                       std::size_t* upload_size, Request*& r) {
  if (r == nullptr) {  // the request line and headers are in
    r = new Request;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (const auto it = connections.find(c); it != connections.end()) it->second->busy = true;
    }
    if (auto refused = check(c, path, method)) return queue(c, *refused);
    return MHD_YES;
  }
  if (*upload_size != 0) {  // a piece of the body: counted, not kept
    r->body += *upload_size;
    *upload_size = 0;
    // Past the limit without a length announced (chunked): closed unanswered, as libmicrohttpd
    // cannot answer in the middle of a body (one with Content-Length gets 413 from check()).
    return r->body > o.max_body_bytes ? MHD_NO : MHD_YES;
  }
  if (r->resumed) return queue(c, answer(*r->ticket));
  if (auto reply = respond(c, path, *r)) return queue(c, *reply);
  return MHD_YES;  // suspended: the watcher resumes it
}

// What is refused before the body: too many headers, no token, a path or method not served, a body
// announced too large. /healthz needs no token (a liveness probe has none) and says nothing more.
std::optional<Reply> ControlServer::Impl::check(MHD_Connection* c, const std::string& path,
                                                const std::string& method) const {
  if (static_cast<std::size_t>(MHD_get_connection_values(c, MHD_HEADER_KIND, nullptr, nullptr)) > o.max_headers) {
    return plain(431, "too many header fields\n");
  }
  const char* allowed = method_of(path);
  if (path == "/healthz" && method == "GET") return plain(200, "ok\n");
  if (!o.token.empty() && !bearer_matches(header(c, MHD_HTTP_HEADER_AUTHORIZATION), o.token)) {
    return plain(401, "unauthorized\n", {{MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer"}});
  }
  if (allowed == nullptr)
    return plain(404, "not found: the endpoint serves /v1/{pause,resume,stop,checkpoint,status}, /metrics, /healthz\n");
  if (method != allowed)
    return plain(405, "method not allowed: " + path + " takes " + allowed + "\n", {{MHD_HTTP_HEADER_ALLOW, allowed}});
  if (const char* length = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
      length != nullptr && std::strtoull(length, nullptr, 10) > o.max_body_bytes) {
    return plain(413, "request body too large\n");
  }
  return std::nullopt;
}

std::optional<Reply> ControlServer::Impl::respond(MHD_Connection* c, const std::string& path, Request& r) {
  const lifecycle::RunStatus* s = status.load();
  if (path == "/v1/status") return s ? Reply{200, s->json()} : Reply{503, "{\"state\": \"starting\"}\n"};
  if (path == "/metrics") {
    if (!s) return plain(503, "starting\n");
    return Reply{200, s->prometheus(), "text/plain; version=0.0.4; charset=utf-8"};
  }
  return command(c, *detail::command_for(path), r);
}

// A POST: the request set now; with ?wait=SECONDS the answer waits (suspended, no thread held)
// until it is carried out or the time is up.
std::optional<Reply> ControlServer::Impl::command(MHD_Connection* c, detail::Command cmd, Request& r) {
  double wait_s = 0;
  if (const char* wait = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait")) {
    char* end = nullptr;
    wait_s = std::strtod(wait, &end);
    if (*wait == '\0' || *end != '\0' || !(wait_s >= 0) || wait_s > static_cast<double>(o.max_wait.count())) {
      return plain(400, "wait= takes seconds, from 0 to " + std::to_string(o.max_wait.count()) + "\n");
    }
  }
  r.ticket = detail::submit(cmd, token, status.load(), peer_of(c));
  if (r.ticket->ended || wait_s <= 0 || detail::reached(*r.ticket, status.load())) return answer(*r.ticket);
  std::lock_guard<std::mutex> lock(mutex);
  if (closing) return answer(*r.ticket);
  r.waiting = true;
  r.wait_until = Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(wait_s * 1e6));
  waiting.emplace_back(c, &r);
  MHD_suspend_connection(c);
  wake.notify_all();
  return std::nullopt;
}

ControlServer::ControlServer(lifecycle::ControlToken& token, ControlServerOptions options)
    : impl_(std::make_unique<Impl>(token, std::move(options))) {
  impl_->start();
}

ControlServer::~ControlServer() { close(); }

void ControlServer::attach(lifecycle::RunStatus& status) { impl_->status.store(&status); }

int ControlServer::port() const { return impl_->port; }

std::string ControlServer::url() const {
  ListenAddress a = impl_->o.address;
  a.port = impl_->port;
  return "http://" + a.text();
}

void ControlServer::close(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  if (s.daemon == nullptr) return;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.closing = true;
    s.wake.notify_all();
    s.wake.wait_until(lock, Clock::now() + grace, [&] { return s.waiting.empty() && s.answering == 0; });
    s.closed = true;
  }
  s.wake.notify_all();
  s.watcher.join();
  for (auto& [c, r] : s.waiting) {  // the grace ran out before the watcher got to them
    r->resumed = true;
    MHD_resume_connection(c);
  }
  s.waiting.clear();
  const MHD_socket fd = MHD_quiesce_daemon(s.daemon);
  MHD_stop_daemon(s.daemon);
  s.daemon = nullptr;
  if (fd != MHD_INVALID_SOCKET) ::close(fd);
}

}  // namespace yolotrain::endpoint
