#pragma once

#include <stdexcept>
#include <string>

namespace yolotrain {

/// The one exception type the library throws. Its message says what was wrong, where
/// (a path, a key, a line) and, where it can, what to do about it.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace yolotrain
