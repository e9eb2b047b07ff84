#pragma once

// A cloud's instance metadata server, faked on 127.0.0.1 for the preemption tests: AWS IMDSv2
// (token PUT, spot/instance-action), GCE (computeMetadata/v1: preempted, maintenance-event,
// upcoming-maintenance) and Azure (Scheduled Events and their acknowledgement, the VM's name), all
// on one port, answering as each cloud documents and refusing what each cloud refuses (no token:
// 401; no Metadata-Flavor: 403; no Metadata: true: 400). A FakeHttpServer's handler; a test links
// YolotrainMicroHttpd::microhttpd.
//
//   yolotrain::test::FakeMetadataServer meta;     // meta.url(): http://127.0.0.1:PORT
//   meta.set_aws_notice("terminate", "2026-12-06T17:00:00Z");
//   setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", meta.url().c_str(), 1);

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_http_server.hpp"

namespace yolotrain::test {

class FakeMetadataServer {
 public:
  FakeMetadataServer() : server_([this](const FakeRequest& r) { return answer(r); }) {}

  int port() const { return server_.port(); }
  std::string url() const { return server_.url(); }
  std::string host() const { return server_.host(); }  ///< GCE_METADATA_HOST's form

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
  using Reply = FakeReply;

  Reply aws(const FakeRequest& r) {
    if (r.path == "/latest/api/token") {
      if (r.method != "PUT" || r.header("X-aws-ec2-metadata-token-ttl-seconds").empty()) return {400, "Bad Request"};
      return {200, "fake-imds-token"};
    }
    if (r.header("X-aws-ec2-metadata-token") != "fake-imds-token") return {401, "Unauthorized"};
    if (r.path == "/latest/meta-data/spot/instance-action" && !aws_action_.empty()) {
      return {200, nlohmann::json{{"action", aws_action_}, {"time", aws_time_}}.dump()};
    }
    return {};
  }

  Reply gcp(const FakeRequest& r) {
    if (r.header("Metadata-Flavor") != "Google") return {403, "Missing Metadata-Flavor:Google header."};
    const std::vector<std::pair<std::string, std::string>> google{{"Metadata-Flavor", "Google"}};
    if (r.path == "/computeMetadata/v1/instance/preempted") return {200, gcp_preempted_ ? "TRUE" : "FALSE", google};
    if (r.path == "/computeMetadata/v1/instance/maintenance-event") return {200, gcp_maintenance_, google};
    if (r.path == "/computeMetadata/v1/instance/upcoming-maintenance") {
      if (gcp_window_start_.empty()) return {503, R"({"error":"no notifications have been received yet"})", google};
      return {200, nlohmann::json{{"type", "SCHEDULED"}, {"maintenance_status", "PENDING"},
                                  {"window_start_time", gcp_window_start_}}.dump(), google};
    }
    return {404, "Not Found", google};
  }

  Reply azure(const FakeRequest& r) {
    if (r.header("Metadata") != "true") {
      return {400, R"({"error":"Bad request. Required metadata header not specified"})"};
    }
    if (r.path == "/metadata/instance/compute/name" && r.query("format") == "text") return {200, azure_vm_};
    if (r.path != "/metadata/scheduledevents" || r.query("api-version").empty()) return {};
    if (r.method == "POST") {
      const auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (!j.is_object() || !j.contains("StartRequests")) return {400, "Bad Request"};
      for (const auto& e : j["StartRequests"]) acknowledged_.push_back(e.value("EventId", ""));
      return {200, ""};
    }
    return {200, nlohmann::json{{"DocumentIncarnation", azure_incarnation_}, {"Events", azure_events_}}.dump()};
  }

  Reply answer(const FakeRequest& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string version = r.query("api-version");
    requests_.push_back(r.method + " " + r.path + (version.empty() ? "" : "?api-version=" + version));
    if (r.path.rfind("/latest/", 0) == 0) return aws(r);
    if (r.path.rfind("/computeMetadata/", 0) == 0) return gcp(r);
    if (r.path.rfind("/metadata/", 0) == 0) return azure(r);
    return {};
  }

  mutable std::mutex mutex_;
  std::string aws_action_, aws_time_;
  bool gcp_preempted_ = false;
  std::string gcp_maintenance_ = "NONE", gcp_window_start_;
  nlohmann::json azure_events_ = nlohmann::json::array();
  std::string azure_vm_ = "yolo-vm";
  int azure_incarnation_ = 1;
  std::vector<std::string> requests_;
  std::vector<std::string> acknowledged_;
  FakeHttpServer server_;  // last: it stops (and no handler runs) before the state above goes
};

}  // namespace yolotrain::test
