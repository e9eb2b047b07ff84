// Azure: Scheduled Events — GET /metadata/scheduledevents?api-version=2020-07-01 with `Metadata: true`
// answers {"DocumentIncarnation": n, "Events": [{"EventId", "EventType", "ResourceType", "Resources",
// "EventStatus", "NotBefore", ...}]} (Azure, "Scheduled Events for Linux VMs"). A spot VM's eviction
// is EventType "Preempt" (NotBefore about 30 s ahead); "Terminate" is a deletion; "Reboot" and
// "Redeploy" take the VM down for maintenance at NotBefore; "Freeze" (a pause of seconds) loses
// nothing and is no notice. Events naming other VMs (Resources) are not this one's: the VM's name
// comes from /metadata/instance/compute/name. An acknowledgement (POST {"StartRequests":
// [{"EventId": ...}]}) lets Azure go on at once. The server: YOLOTRAIN_AZURE_IMDS_ENDPOINT (a URL;
// Azure's SDKs have no override for Scheduled Events — AZURE_POD_IDENTITY_AUTHORITY_HOST is pod
// identity's, IMDS_ENDPOINT Azure Arc's agent), else http://169.254.169.254.
#include <map>
#include <nlohmann/json.hpp>

#include "metadata_http.hpp"
#include "notice_sources.hpp"
#include "notice_time.hpp"

namespace yolotrain::cloud::detail {
namespace {

using Clock = std::chrono::system_clock;
constexpr const char* kEvents = "/metadata/scheduledevents?api-version=2020-07-01";

std::optional<NoticeKind> kind_of(const std::string& type) {
  if (type == "Preempt" || type == "Terminate") return NoticeKind::Reclaim;
  if (type == "Reboot" || type == "Redeploy") return NoticeKind::Maintenance;
  return std::nullopt;
}

class AzureNotices final : public NoticeSource {
 public:
  explicit AzureNotices(std::string base) : base_(std::move(base)) {}
  Cloud cloud() const override { return Cloud::Azure; }
  std::string endpoint() const override { return base_; }

  std::optional<Notice> poll() override {
    if (!vm_name_) vm_name_ = read_vm_name();
    const HttpRequest get{"GET", base_ + kEvents, {"Metadata: true"}};
    const HttpReply r = send(get);
    if (r.status != 200) throw NoticeError(describe(get, r));
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("Events") || !j["Events"].is_array()) {
      throw NoticeError(describe(get, r) + " (no \"Events\" list in the answer)");
    }
    std::optional<Notice> first;
    for (const auto& e : j["Events"]) {
      auto n = notice_of(e);
      if (n && (!first || n->deadline < first->deadline)) first = std::move(n);
    }
    return first;
  }

  void acknowledge(const Notice& notice) override {
    if (notice.id.empty()) return;
    const nlohmann::json body = {{"StartRequests", {{{"EventId", notice.id}}}}};
    const HttpRequest post{"POST", base_ + kEvents, {"Metadata: true", "Content-Type: application/json"}, body.dump()};
    const HttpReply r = send(post);
    if (r.status / 100 != 2) throw NoticeError(describe(post, r));
  }

 private:
  std::optional<Notice> notice_of(const nlohmann::json& e) {
    if (!e.is_object()) return std::nullopt;
    const auto kind = kind_of(e.value("EventType", ""));
    if (!kind || !names_this_vm(e)) return std::nullopt;
    Notice n;
    n.cloud = Cloud::Azure;
    n.kind = *kind;
    n.id = e.value("EventId", "");
    n.event = e.value("EventType", "");
    auto& seen = first_seen_[n.id];
    if (seen == Clock::time_point{}) seen = Clock::now();
    n.seen = seen;
    const auto not_before = parse_rfc1123(e.value("NotBefore", ""));  // "" once the event has started
    n.deadline = not_before ? *not_before : n.seen;
    n.deadline_source = not_before ? "the event's NotBefore" : "the event has started";
    return n;
  }

  bool names_this_vm(const nlohmann::json& e) const {
    if (vm_name_->empty() || !e.contains("Resources") || !e["Resources"].is_array()) return true;
    for (const auto& r : e["Resources"]) {
      if (r.is_string() && r.get<std::string>() == *vm_name_) return true;
    }
    return false;
  }

  // The VM's name, or "" when the server does not say (every event is then taken as this VM's).
  std::string read_vm_name() const {
    const HttpRequest get{
        "GET", base_ + "/metadata/instance/compute/name?api-version=2021-02-01&format=text", {"Metadata: true"}};
    const HttpReply r = send(get);
    if (!r.error.empty()) throw NoticeError(describe(get, r));
    return r.status == 200 ? r.body : std::string();
  }

  std::string base_;
  std::optional<std::string> vm_name_;
  std::map<std::string, Clock::time_point> first_seen_;
};

}  // namespace

std::unique_ptr<NoticeSource> azure_notices(const std::string& base) { return std::make_unique<AzureNotices>(base); }

}  // namespace yolotrain::cloud::detail
