#include "arg_values.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>
#include <cstdlib>

namespace yolotrain::engine::args {

void bad(const std::string& key, const std::string& value, const std::string& allowed) {
  throw ConfigError("argument '" + key + "': '" + value + "' is not valid; " + allowed);
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

bool to_bool(const std::string& key, const std::string& v) {
  const std::string l = lower(v);
  if (l == "true" || l == "1" || l == "yes") return true;
  if (l == "false" || l == "0" || l == "no") return false;
  bad(key, v, "expected true or false");
}

std::int64_t to_int(const std::string& key, const std::string& v, std::int64_t min, std::int64_t max) {
  std::int64_t out = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) bad(key, v, "expected an integer");
  if (out < min || out > max) bad(key, v, "expected " + std::to_string(min) + " to " + std::to_string(max));
  return out;
}

double to_double(const std::string& key, const std::string& v, double min, double max) {
  char* end = nullptr;
  const double out = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(out)) bad(key, v, "expected a number");
  if (out < min || out > max)
    bad(key, v, "expected a number from " + std::to_string(min) + " to " + std::to_string(max));
  return out;
}

bool is_none(const std::string& v) {
  const std::string l = lower(v);
  return l.empty() || l == "none" || l == "null" || l == "~";
}

std::vector<std::int64_t> int_list(const std::string& key, std::string v) {
  for (char& c : v) {
    if (c == '[' || c == ']' || c == '(' || c == ')') c = ' ';
  }
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  while (at <= v.size()) {
    const std::size_t comma = std::min(v.find(',', at), v.size());
    std::string item = v.substr(at, comma - at);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) bad(key, v, "expected integers separated by commas");
    out.push_back(to_int(key, item, 0, 1 << 20));
    at = comma + 1;
  }
  return out;
}

}  // namespace yolotrain::engine::args
