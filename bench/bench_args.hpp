#pragma once

// key=value arguments of a benchmark over its defaults: `args` holds every known key with its
// default; an argument that is not key=value or names another key is reported and refused.

#include <cstdio>
#include <map>
#include <string>

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

}  // namespace yolotrain::bench
