#pragma once
// The times metadata servers write: RFC 3339 (AWS "2017-09-18T08:22:00Z", GCE
// "2024-02-01T12:00:00.000-08:00") and RFC 1123 (Azure "Mon, 19 Sep 2016 18:29:47 GMT").
#include <chrono>
#include <optional>
#include <string>

namespace yolotrain::cloud::detail {

using TimePoint = std::chrono::system_clock::time_point;

std::optional<TimePoint> parse_rfc3339(const std::string& text);
std::optional<TimePoint> parse_rfc1123(const std::string& text);

}  // namespace yolotrain::cloud::detail
