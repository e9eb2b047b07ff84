#pragma once
// A NoticeSource polled on a thread of its own: the newest notice kept for the training thread to
// read (no lock on its path but one mutex), a callback when a new one arrives, a failure to reach
// the server said once (and again only when the reason changes), never fatal.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "yolotrain/cloud/notice.hpp"

namespace yolotrain::cloud {

struct NoticeWatcherOptions {
  std::chrono::milliseconds interval{5000};  ///< between polls (AWS advises 5 s)
  /// A new notice (on the watcher's thread): a ControlToken's request_checkpoint() belongs here.
  std::function<void(const Notice&)> on_notice;
  /// A change in whether the server can be read: its reason, or "" once it answers again (on the
  /// watcher's thread). Default: a line on stderr.
  std::function<void(const std::string&)> on_problem;
};

class NoticeWatcher {
 public:
  /// Starts polling at once.
  NoticeWatcher(std::unique_ptr<NoticeSource> source, NoticeWatcherOptions options);
  /// stop().
  ~NoticeWatcher();
  NoticeWatcher(const NoticeWatcher&) = delete;
  NoticeWatcher& operator=(const NoticeWatcher&) = delete;

  /// The newest notice seen, if any (it stays once seen: a notice withdrawn is not trusted to be).
  std::optional<Notice> notice() const;
  /// Polls made so far (answered or not).
  std::uint64_t polls() const;
  /// Acknowledges the notice seen (Azure: the machine may be taken now). Returns the error, or "".
  std::string acknowledge();
  /// Ends the polling thread (waits for a poll in flight, at most its timeout).
  void stop();
  Cloud cloud() const;
  std::string endpoint() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::cloud
