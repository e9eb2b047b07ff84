// GCE: a spot or preemptible VM's preemption — GET computeMetadata/v1/instance/preempted says
// "TRUE" from the notice on, 30 s before the VM stops (Compute Engine, "Preemption process") — and
// a host's maintenance — instance/maintenance-event says TERMINATE_ON_HOST_MAINTENANCE when the VM
// (every GPU VM: they cannot live-migrate) will be stopped, with instance/upcoming-maintenance?alt=json
// giving the window's start (window_start_time) when the server has it, else the 60 s the
// maintenance-event key is documented to lead by (the shorter lead: a stop too early loses nothing).
// MIGRATE_ON_HOST_MAINTENANCE (a live migration) loses nothing and is no notice. Every request
// carries `Metadata-Flavor: Google` and its answer must too. The server: GCE_METADATA_HOST
// (HOST[:PORT], as google-auth and the Cloud SDK read it), else 169.254.169.254.
//
// wait_for_change is not used: a hanging GET per key would need a thread (or the recursive
// instance document and its ETag) for two keys, and polling every preemption_interval (5 s) of a
// 30 s notice costs at most that much of it.
#include <nlohmann/json.hpp>

#include "metadata_http.hpp"
#include "notice_sources.hpp"
#include "notice_time.hpp"

namespace yolotrain::cloud::detail {
namespace {

using Clock = std::chrono::system_clock;

class GcpNotices final : public NoticeSource {
 public:
  explicit GcpNotices(std::string base) : base_(std::move(base)) {}
  Cloud cloud() const override { return Cloud::Gcp; }
  std::string endpoint() const override { return base_; }

  std::optional<Notice> poll() override {
    if (value("instance/preempted") == "TRUE") {
      if (!preempted_since_) preempted_since_ = Clock::now();
      return notice(NoticeKind::Reclaim, "instance/preempted", *preempted_since_ + std::chrono::seconds(30),
                    "GCE's documented 30 s", *preempted_since_);
    }
    const std::string event = value("instance/maintenance-event");
    if (event.rfind("TERMINATE_ON_HOST_MAINTENANCE", 0) != 0) {
      maintenance_since_.reset();
      return std::nullopt;
    }
    if (!maintenance_since_) maintenance_since_ = Clock::now();
    if (auto start = window_start()) {
      return notice(NoticeKind::Maintenance, "instance/maintenance-event " + event, *start,
                    "instance/upcoming-maintenance", *maintenance_since_);
    }
    return notice(NoticeKind::Maintenance, "instance/maintenance-event " + event,
                  *maintenance_since_ + std::chrono::seconds(60), "GCE's documented 60 s", *maintenance_since_);
  }

 private:
  static Notice notice(NoticeKind kind, std::string event, Clock::time_point deadline, std::string source,
                       Clock::time_point seen) {
    Notice n;
    n.cloud = Cloud::Gcp;
    n.kind = kind;
    n.event = std::move(event);
    n.deadline = deadline;
    n.deadline_source = std::move(source);
    n.seen = seen;
    return n;
  }

  HttpReply get(const std::string& key) {
    last_ = HttpRequest{"GET", base_ + "/computeMetadata/v1/" + key, {"Metadata-Flavor: Google"}};
    return send(last_);
  }

  std::string value(const std::string& key) {
    const HttpReply r = get(key);
    if (r.status != 200) throw NoticeError(describe(last_, r));
    if (r.header("Metadata-Flavor") != "Google") {
      throw NoticeError(describe(last_, r) + " (the answer lacks \"Metadata-Flavor: Google\": not GCE's server)");
    }
    std::string v = r.body;
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
  }

  // upcoming-maintenance's window start, when the server has one (404, 503 or "{ }" otherwise).
  std::optional<Clock::time_point> window_start() {
    const HttpReply r = get("instance/upcoming-maintenance?alt=json");
    if (r.status != 200) return std::nullopt;
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    for (const char* key : {"window_start_time", "latest_window_start_time"}) {
      if (j.is_object() && j.contains(key) && j[key].is_string()) {
        if (auto t = parse_rfc3339(j[key].get<std::string>())) return t;
      }
    }
    return std::nullopt;
  }

  std::string base_;
  HttpRequest last_;
  std::optional<Clock::time_point> preempted_since_, maintenance_since_;
};

}  // namespace

std::unique_ptr<NoticeSource> gcp_notices(const std::string& base) { return std::make_unique<GcpNotices>(base); }

}  // namespace yolotrain::cloud::detail
