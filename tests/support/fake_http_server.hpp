#pragma once

// A small HTTP server on 127.0.0.1 (a free port) for tests that need a server to answer as another
// service would: each request, with its body, goes to a handler on libmicrohttpd's thread. The
// fake cloud metadata server (fake_metadata_server.hpp) and the fake Kubeflow Trainer status server
// are handlers. Given a key and certificate (self_signed_cert.hpp) it speaks https. A test links
// YolotrainMicroHttpd::microhttpd.
//
//   yolotrain::test::FakeHttpServer server([](const yolotrain::test::FakeRequest& r) {
//     return yolotrain::test::FakeReply{200, "hello"};
//   });                                               // server.url(): http://127.0.0.1:PORT

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace yolotrain::test {

struct FakeRequest {
  std::string method, path, body;
  MHD_Connection* connection = nullptr;
  /// A request header's value, "" when absent.
  std::string header(const char* name) const { return value(MHD_HEADER_KIND, name); }
  /// A query argument's value, "" when absent.
  std::string query(const char* name) const { return value(MHD_GET_ARGUMENT_KIND, name); }

 private:
  std::string value(MHD_ValueKind kind, const char* name) const {
    const char* v = MHD_lookup_connection_value(connection, kind, name);
    return v ? v : "";
  }
};

struct FakeReply {
  unsigned code = 404;
  std::string body = "Not Found";
  std::vector<std::pair<std::string, std::string>> headers = {};
};

class FakeHttpServer {
 public:
  using Handler = std::function<FakeReply(const FakeRequest&)>;

  /// `tls`: {PEM key, PEM certificate} to serve https (GNU libmicrohttpd's GnuTLS), or plain http.
  explicit FakeHttpServer(Handler handler, std::optional<std::pair<std::string, std::string>> tls = std::nullopt)
      : handler_(std::move(handler)), tls_(std::move(tls)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("FakeHttpServer: cannot listen on 127.0.0.1");
    }
    port_ = ntohs(a.sin_port);
    std::vector<MHD_OptionItem> options{
        {MHD_OPTION_LISTEN_SOCKET, fd_, nullptr},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&FakeHttpServer::completed), nullptr}};
    if (tls_) {
      options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(tls_->first.c_str())});
      options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(tls_->second.c_str())});
    }
    options.push_back({MHD_OPTION_END, 0, nullptr});
    const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | (tls_ ? MHD_USE_TLS : 0);
    daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &FakeHttpServer::handle, this, MHD_OPTION_ARRAY,
                               options.data(), MHD_OPTION_END);
    if (daemon_ == nullptr) throw std::runtime_error("FakeHttpServer: MHD_start_daemon failed");
  }
  ~FakeHttpServer() {
    if (daemon_) MHD_stop_daemon(daemon_);
    if (fd_ >= 0) ::close(fd_);
  }
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  int port() const { return port_; }
  std::string url() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  static MHD_Result handle(void* self, MHD_Connection* c, const char* url, const char* method, const char*,
                           const char* upload, size_t* upload_size, void** con_cls) {
    if (*con_cls == nullptr) {
      *con_cls = new std::string;
      return MHD_YES;
    }
    auto* body = static_cast<std::string*>(*con_cls);
    if (*upload_size != 0) {
      body->append(upload, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    FakeRequest request{method, url, *body, c};
    const FakeReply r = static_cast<FakeHttpServer*>(self)->handler_(request);
    MHD_Response* response =
        MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
    for (const auto& [name, value] : r.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
    const MHD_Result queued = MHD_queue_response(c, r.code, response);
    MHD_destroy_response(response);
    return queued;
  }

  static void completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    delete static_cast<std::string*>(*con_cls);
    *con_cls = nullptr;
  }

  Handler handler_;
  std::optional<std::pair<std::string, std::string>> tls_;
  int fd_ = -1;
  int port_ = 0;
  MHD_Daemon* daemon_ = nullptr;
};

}  // namespace yolotrain::test
