#pragma once

// A string test the io part's readers share (private to src/io).

#include <string>

namespace yolotrain::io::detail {

/// True when `s` ends with `suffix`.
inline bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace yolotrain::io::detail
