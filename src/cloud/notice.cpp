// The clouds by name, and each one's metadata server: an explicit base, the cloud tools' override
// variable, or the link-local address.
#include "yolotrain/cloud/notice.hpp"

#include <cstdlib>

#include "notice_sources.hpp"

namespace yolotrain::cloud {
namespace {

constexpr const char* kLinkLocal = "http://169.254.169.254";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string without_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// The variable's URL; GCE_METADATA_HOST is HOST[:PORT] without a scheme.
std::string server_of(Cloud cloud) {
  switch (cloud) {
    case Cloud::Aws:
      if (auto v = env("AWS_EC2_METADATA_SERVICE_ENDPOINT"); !v.empty()) return v;
      if (env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE") == "IPv6") return "http://[fd00:ec2::254]";
      break;
    case Cloud::Gcp:
      if (auto v = env("GCE_METADATA_HOST"); !v.empty()) return v.find("://") == std::string::npos ? "http://" + v : v;
      break;
    case Cloud::Azure:
      if (auto v = env("YOLOTRAIN_AZURE_IMDS_ENDPOINT"); !v.empty()) return v;
      break;
    case Cloud::None: break;
  }
  return kLinkLocal;
}

}  // namespace

const char* to_string(Cloud cloud) noexcept {
  switch (cloud) {
    case Cloud::None: return "none";
    case Cloud::Aws: return "aws";
    case Cloud::Gcp: return "gcp";
    case Cloud::Azure: return "azure";
  }
  return "none";
}

Cloud parse_cloud(const std::string& name) {
  if (name == "aws") return Cloud::Aws;
  if (name == "gcp" || name == "gce" || name == "google") return Cloud::Gcp;
  if (name == "azure") return Cloud::Azure;
  throw ConfigError("unknown cloud '" + name + "': aws, gcp or azure");
}

std::unique_ptr<NoticeSource> make_notice_source(Cloud cloud, const std::string& base) {
  if (cloud == Cloud::Aws && base.empty() && env("AWS_EC2_METADATA_DISABLED") == "true") {
    throw ConfigError("AWS_EC2_METADATA_DISABLED=true: the instance metadata service is off for this process, so "
                      "spot notices cannot be read (unset it, or leave preemption=off)");
  }
  const std::string server = without_trailing_slash(base.empty() ? server_of(cloud) : base);
  switch (cloud) {
    case Cloud::Aws: return detail::aws_notices(server);
    case Cloud::Gcp: return detail::gcp_notices(server);
    case Cloud::Azure: return detail::azure_notices(server);
    case Cloud::None: break;
  }
  throw ConfigError("make_notice_source: no cloud given (aws, gcp or azure)");
}

}  // namespace yolotrain::cloud
