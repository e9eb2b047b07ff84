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

/// A bad argument or a run that cannot be done as asked: the command line must change
/// (yolo_train exits 2). Thrown by every mode's argument parsing (train, val, predict, export).
class ConfigError : public Error {
 public:
  using Error::Error;
};

}  // namespace yolotrain
