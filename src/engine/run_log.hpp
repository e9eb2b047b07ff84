#pragma once
// A run's words: the terminal and train.log. Rank 0 speaks for the group (Ultralytics' LOGGER);
// a progress line is rewritten in place on a terminal until the next line is said.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace yolotrain::engine::detail {

/// A duration as the log says it: "1.3 s".
std::string seconds_text(double seconds);

class RunLog {
 public:
  RunLog();
  /// Whether this process speaks (rank 0); the others say nothing.
  void set_speaks(bool speaks) { speaks_ = speaks; }
  /// Opens train.log (appended to). The lines said before it opened are written first, so the
  /// file holds everything the terminal showed.
  void open(const std::filesystem::path& file);
  /// A line on the terminal and in train.log.
  void say(const std::string& line);
  /// A line in train.log only.
  void log_only(const std::string& line);
  /// A progress line: rewritten in place on a terminal, a line of its own elsewhere; `final`
  /// (the epoch's last) ends it and writes it to train.log.
  void progress(const std::string& line, bool final);
  /// Whether the terminal is a tty (the progress line is rewritten in place).
  bool tty() const { return tty_; }

 private:
  void to_file(const std::string& line);

  bool speaks_ = true, tty_ = false, line_open_ = false;
  std::ofstream file_;
  std::vector<std::string> before_open_;
};

}  // namespace yolotrain::engine::detail
