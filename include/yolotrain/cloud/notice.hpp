#pragma once
// yolotrain::cloud — a cloud's notice that it will take this machine back (a spot reclaim, a
// preemption, a host's maintenance), read from the instance's metadata server the way each cloud
// documents it. Its own library, yolotrain::cloud (libcurl), on yolotrain::lifecycle alone: a
// custom loop may use it with its own ControlToken.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::cloud {

/// The clouds whose notices are read.
enum class Cloud { None, Aws, Gcp, Azure };

/// "none", "aws", "gcp", "azure".
const char* to_string(Cloud cloud) noexcept;

/// What a notice announces.
enum class NoticeKind {
  Reclaim,      ///< the machine is taken back (spot, preemptible, eviction): work after the deadline is lost
  Maintenance,  ///< the host goes down for maintenance at the deadline (may be far ahead)
};

/// One notice, as the metadata server gave it.
struct Notice {
  Cloud cloud = Cloud::None;
  NoticeKind kind = NoticeKind::Reclaim;
  /// What announced it, in the cloud's words: "spot/instance-action terminate",
  /// "instance/preempted", "instance/maintenance-event TERMINATE_ON_HOST_MAINTENANCE", "Preempt".
  std::string event;
  /// When the machine goes (the cloud's time, or the notice's documented lead time from `seen`).
  std::chrono::system_clock::time_point deadline;
  /// When this process first read it.
  std::chrono::system_clock::time_point seen;
  /// Azure's EventId (what an acknowledgement names); "" elsewhere.
  std::string id;
  /// Where the deadline came from: "the notice's time" or "GCE's documented 30 s".
  std::string deadline_source;
};

/// A metadata server that could not be read or answered what its cloud never answers.
class NoticeError : public Error {
 public:
  using Error::Error;
};

/// One cloud's notices. poll() asks the metadata server once.
class NoticeSource {
 public:
  virtual ~NoticeSource() = default;
  virtual Cloud cloud() const = 0;
  /// The metadata server asked (after the override variables): e.g. "http://169.254.169.254".
  virtual std::string endpoint() const = 0;
  /// The notice in force now, or none. Throws NoticeError when the server cannot be read.
  virtual std::optional<Notice> poll() = 0;
  /// Tells the cloud this machine may be taken now (Azure: the event's StartRequests POST); does
  /// nothing on clouds without one. Throws NoticeError when the cloud does not take it.
  virtual void acknowledge(const Notice& notice) { (void)notice; }
};

/// The source for `cloud` (not None). Its server: `base` when given (a URL, "http://HOST:PORT"),
/// else the cloud tools' own override — AWS_EC2_METADATA_SERVICE_ENDPOINT (a URL; or
/// AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6), GCE_METADATA_HOST (HOST[:PORT]) — or, for Azure,
/// whose SDKs have none for Scheduled Events, YOLOTRAIN_AZURE_IMDS_ENDPOINT (a URL) — else the
/// link-local address 169.254.169.254. Throws ConfigError for AWS when AWS_EC2_METADATA_DISABLED=true.
std::unique_ptr<NoticeSource> make_notice_source(Cloud cloud, const std::string& base = "");

/// "aws", "gcp" (or "gce", "google"), "azure" -> the cloud; throws ConfigError naming the choices.
Cloud parse_cloud(const std::string& name);

}  // namespace yolotrain::cloud
