// AWS: EC2 spot's interruption notice through IMDSv2 — a session token (PUT /latest/api/token),
// then GET /latest/meta-data/spot/instance-action: 404 while there is none, else
// {"action": "terminate" | "stop" | "hibernate", "time": "2017-09-18T08:22:00Z"}, about two minutes
// ahead (EC2 User Guide, "Spot Instance interruption notices"). The server: the AWS SDKs' and
// CLI's AWS_EC2_METADATA_SERVICE_ENDPOINT (a URL), else http://169.254.169.254.
#include <nlohmann/json.hpp>

#include "metadata_http.hpp"
#include "notice_sources.hpp"
#include "notice_time.hpp"

namespace yolotrain::cloud::detail {
namespace {

constexpr auto kTokenLife = std::chrono::hours(6);

class AwsNotices final : public NoticeSource {
 public:
  explicit AwsNotices(std::string base) : base_(std::move(base)) {}
  Cloud cloud() const override { return Cloud::Aws; }
  std::string endpoint() const override { return base_; }

  std::optional<Notice> poll() override {
    HttpReply r = get_action();
    if (r.status == 401) {  // the token expired early (the instance was stopped and started)
      token_.clear();
      r = get_action();
    }
    if (r.status == 404) return std::nullopt;
    if (r.status != 200) throw NoticeError(describe(last_, r));
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("action") || !j["action"].is_string()) {
      throw NoticeError(describe(last_, r) + " (no \"action\" in the answer)");
    }
    Notice n;
    n.cloud = Cloud::Aws;
    n.event = "spot/instance-action " + j["action"].get<std::string>();
    n.seen = std::chrono::system_clock::now();
    const auto time = j.contains("time") && j["time"].is_string() ? parse_rfc3339(j["time"]) : std::nullopt;
    n.deadline = time ? *time : n.seen + std::chrono::minutes(2);
    n.deadline_source = time ? "the notice's time" : "AWS's documented 2 minutes";
    return n;
  }

 private:
  HttpReply get_action() {
    if (token_.empty() || std::chrono::steady_clock::now() >= token_expires_) fetch_token();
    last_ = HttpRequest{"GET", base_ + "/latest/meta-data/spot/instance-action",
                        {"X-aws-ec2-metadata-token: " + token_}};
    return send(last_);
  }

  void fetch_token() {
    const HttpRequest put{"PUT", base_ + "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}};
    const HttpReply r = send(put);
    if (r.status != 200 || r.body.empty()) throw NoticeError(describe(put, r) + " (the IMDSv2 session token)");
    token_ = r.body;
    token_expires_ = std::chrono::steady_clock::now() + kTokenLife - std::chrono::minutes(5);
  }

  std::string base_;
  std::string token_;
  std::chrono::steady_clock::time_point token_expires_{};
  HttpRequest last_;
};

}  // namespace

std::unique_ptr<NoticeSource> aws_notices(const std::string& base) { return std::make_unique<AwsNotices>(base); }

}  // namespace yolotrain::cloud::detail
