#pragma once

// A cloud's instance metadata server, faked on 127.0.0.1 for the preemption tests: AWS IMDSv2
// (token PUT, spot/instance-action), GCE (computeMetadata/v1: preempted, maintenance-event,
// upcoming-maintenance) and Azure (Scheduled Events and their acknowledgement, the VM's name), all
// on one port, answering as each cloud documents and refusing what each cloud refuses (no token:
// 401; no Metadata-Flavor: 403; no Metadata: true: 400). GNU libmicrohttpd on a thread of its own;
// a test links YolotrainMicroHttpd::microhttpd.
//
//   yolotrain::test::FakeMetadataServer meta;     // meta.url(): http://127.0.0.1:PORT
//   meta.set_aws_notice("terminate", "2026-12-06T17:00:00Z");
//   setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", meta.url().c_str(), 1);

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace yolotrain::test {

class FakeMetadataServer {
 public:
  FakeMetadataServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("FakeMetadataServer: cannot listen on 127.0.0.1");
    }
    port_ = ntohs(a.sin_port);
    daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, nullptr, nullptr, &FakeMetadataServer::handle,
                               this, MHD_OPTION_LISTEN_SOCKET, fd_, MHD_OPTION_NOTIFY_COMPLETED,
                               &FakeMetadataServer::completed, nullptr, MHD_OPTION_END);
    if (daemon_ == nullptr) throw std::runtime_error("FakeMetadataServer: MHD_start_daemon failed");
  }
  ~FakeMetadataServer() {
    if (daemon_) MHD_stop_daemon(daemon_);
    if (fd_ >= 0) ::close(fd_);
  }
  FakeMetadataServer(const FakeMetadataServer&) = delete;
  FakeMetadataServer& operator=(const FakeMetadataServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }  ///< GCE_METADATA_HOST's form

  /// AWS: spot/instance-action's answer ({"action", "time"}); an empty action: 404 (no notice).
  void set_aws_notice(const std::string& action, const std::string& time) {
    std::lock_guard<std::mutex> lock(mutex_);
    aws_action_ = action;
    aws_time_ = time;
  }
  /// GCE: instance/preempted's "TRUE" or "FALSE".
  void set_gcp_preempted(bool preempted) {
    std::lock_guard<std::mutex> lock(mutex_);
    gcp_preempted_ = preempted;
  }
  /// GCE: instance/maintenance-event's value, and upcoming-maintenance's window_start_time ("": none).
  void set_gcp_maintenance(const std::string& event, const std::string& window_start = "") {
    std::lock_guard<std::mutex> lock(mutex_);
    gcp_maintenance_ = event;
    gcp_window_start_ = window_start;
  }
  /// Azure: the Scheduled Events document's Events list, and the VM's name.
  void set_azure_events(const nlohmann::json& events, const std::string& vm_name = "yolo-vm") {
    std::lock_guard<std::mutex> lock(mutex_);
    azure_events_ = events;
    azure_vm_ = vm_name;
    ++azure_incarnation_;
  }
  /// Every request so far: "GET /path?query".
  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  /// Requests whose "METHOD /path" starts with `prefix`.
  std::size_t count(const std::string& prefix) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& r : requests_) n += r.rfind(prefix, 0) == 0;
    return n;
  }
  /// The EventIds Azure was told to start (acknowledged).
  std::vector<std::string> azure_acknowledged() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return acknowledged_;
  }

 private:
  struct Reply {
    unsigned code = 404;
    std::string body = "Not Found";
    std::vector<std::pair<std::string, std::string>> headers;
  };

  static std::string header(MHD_Connection* c, const char* name) {
    const char* v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "";
  }
  static std::string query(MHD_Connection* c, const char* name) {
    const char* v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    return v ? v : "";
  }

  Reply aws(MHD_Connection* c, const std::string& method, const std::string& path) {
    if (path == "/latest/api/token") {
      if (method != "PUT" || header(c, "X-aws-ec2-metadata-token-ttl-seconds").empty()) return {400, "Bad Request", {}};
      return {200, "fake-imds-token", {}};
    }
    if (header(c, "X-aws-ec2-metadata-token") != "fake-imds-token") return {401, "Unauthorized", {}};
    if (path == "/latest/meta-data/spot/instance-action" && !aws_action_.empty()) {
      return {200, nlohmann::json{{"action", aws_action_}, {"time", aws_time_}}.dump(), {}};
    }
    return {};
  }

  Reply gcp(MHD_Connection* c, const std::string& path) {
    if (header(c, "Metadata-Flavor") != "Google") return {403, "Missing Metadata-Flavor:Google header.", {}};
    const std::vector<std::pair<std::string, std::string>> google{{"Metadata-Flavor", "Google"}};
    if (path == "/computeMetadata/v1/instance/preempted") return {200, gcp_preempted_ ? "TRUE" : "FALSE", google};
    if (path == "/computeMetadata/v1/instance/maintenance-event") return {200, gcp_maintenance_, google};
    if (path == "/computeMetadata/v1/instance/upcoming-maintenance") {
      if (gcp_window_start_.empty()) return {503, R"({"error":"no notifications have been received yet"})", google};
      return {200, nlohmann::json{{"type", "SCHEDULED"}, {"maintenance_status", "PENDING"},
                                  {"window_start_time", gcp_window_start_}}.dump(), google};
    }
    return {404, "Not Found", google};
  }

  Reply azure(MHD_Connection* c, const std::string& method, const std::string& path, const std::string& body) {
    if (header(c, "Metadata") != "true") {
      return {400, R"({"error":"Bad request. Required metadata header not specified"})", {}};
    }
    if (path == "/metadata/instance/compute/name" && query(c, "format") == "text") return {200, azure_vm_, {}};
    if (path != "/metadata/scheduledevents" || query(c, "api-version").empty()) return {};
    if (method == "POST") {
      const auto j = nlohmann::json::parse(body, nullptr, false);
      if (!j.is_object() || !j.contains("StartRequests")) return {400, "Bad Request", {}};
      for (const auto& r : j["StartRequests"]) acknowledged_.push_back(r.value("EventId", ""));
      return {200, "", {}};
    }
    return {200, nlohmann::json{{"DocumentIncarnation", azure_incarnation_}, {"Events", azure_events_}}.dump(), {}};
  }

  Reply answer(MHD_Connection* c, const std::string& method, const std::string& path, const std::string& body) {
    std::lock_guard<std::mutex> lock(mutex_);
    const char* q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "api-version");
    requests_.push_back(method + " " + path + (q ? std::string("?api-version=") + q : ""));
    if (path.rfind("/latest/", 0) == 0) return aws(c, method, path);
    if (path.rfind("/computeMetadata/", 0) == 0) return gcp(c, path);
    if (path.rfind("/metadata/", 0) == 0) return azure(c, method, path, body);
    return {};
  }

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
    const Reply r = static_cast<FakeMetadataServer*>(self)->answer(c, method, url, *body);
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

  int fd_ = -1;
  int port_ = 0;
  MHD_Daemon* daemon_ = nullptr;
  mutable std::mutex mutex_;
  std::string aws_action_, aws_time_;
  bool gcp_preempted_ = false;
  std::string gcp_maintenance_ = "NONE", gcp_window_start_;
  nlohmann::json azure_events_ = nlohmann::json::array();
  std::string azure_vm_ = "yolo-vm";
  int azure_incarnation_ = 1;
  std::vector<std::string> requests_;
  std::vector<std::string> acknowledged_;
};

}  // namespace yolotrain::test
