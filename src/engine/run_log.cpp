#include "run_log.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace yolotrain::engine::detail {

std::string seconds_text(double seconds) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.1f s", seconds);
  return out;
}

RunLog::RunLog() : tty_(isatty(STDOUT_FILENO) == 1) {}

void RunLog::open(const std::filesystem::path& file) {
  if (!speaks_) return;
  if (file_.is_open()) file_.close();  // a run started again in its folder (a first-epoch OOM)
  file_.open(file, std::ios::app);
  for (const auto& line : before_open_) to_file(line);
  before_open_.clear();
}

void RunLog::to_file(const std::string& line) {
  if (file_.is_open()) file_ << line << std::endl;
  else before_open_.push_back(line);
}

void RunLog::say(const std::string& line) {
  if (!speaks_) return;
  if (line_open_) std::cout << "\n";
  line_open_ = false;
  std::cout << line << std::endl;
  to_file(line);
}

void RunLog::log_only(const std::string& line) {
  if (speaks_) to_file(line);
}

void RunLog::progress(const std::string& line, bool final) {
  if (!speaks_) return;
  if (tty_) {
    std::cout << "\r" << line << "\033[K" << std::flush;  // rewrite in place; clear leftovers
    line_open_ = true;
  } else {
    std::cout << line << std::endl;
  }
  if (final) {
    if (line_open_) std::cout << std::endl;
    line_open_ = false;
    to_file(line);
  }
}

}  // namespace yolotrain::engine::detail
