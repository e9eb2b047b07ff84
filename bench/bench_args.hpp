#pragma once

// key=value arguments of a benchmark over its defaults: `args` holds every known key with its
// default; an argument that is not key=value or names another key is reported and refused.

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace yolotrain::bench {

/// Overrides `args` from argv; false (after a message naming `program` and the argument) on a bad one.
inline bool parse_args(const char* program, int argc, char** argv, std::map<std::string, std::string>& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const auto eq = s.find('=');
    if (eq == std::string::npos || !args.count(s.substr(0, eq))) {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", program, argv[i]);
      return false;
    }
    args[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return true;
}

/// "a,b,,c" -> {a, b, c}: a list argument's items.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace yolotrain::bench
