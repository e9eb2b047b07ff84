#include "notice_time.hpp"

#include <cstdio>
#include <ctime>
#include <regex>

namespace yolotrain::cloud::detail {
namespace {

std::optional<TimePoint> from_tm(std::tm tm, double fraction, long offset_s) {
  const std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  const auto ms = std::chrono::milliseconds(static_cast<long long>(fraction * 1000.0 + 0.5));
  return std::chrono::system_clock::from_time_t(t - offset_s) + ms;
}

}  // namespace

std::optional<TimePoint> parse_rfc3339(const std::string& text) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  const double fraction = m[7].matched ? std::stod("0" + m[7].str()) : 0.0;
  long offset = 0;
  const std::string zone = m[8].str();
  if (!zone.empty() && zone != "Z" && zone != "z") {
    const int hours = std::stoi(zone.substr(1, 2));
    const int minutes = std::stoi(zone.substr(zone.size() - 2));
    offset = (zone[0] == '-' ? -1 : 1) * (hours * 3600L + minutes * 60L);
  }
  return from_tm(tm, fraction, offset);
}

std::optional<TimePoint> parse_rfc1123(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  const std::string zone = end;
  if (zone != " GMT" && zone != " UTC" && zone != "") return std::nullopt;
  return from_tm(tm, 0.0, 0);
}

}  // namespace yolotrain::cloud::detail
