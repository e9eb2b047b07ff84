#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// Draws and writes plots on a thread of its own, so that the caller (a training step) never
/// waits for one. Each job draws an image and writes it atomically as JPEG (.jpg) or PNG (.png), or
/// writes a text (the numbers beside a picture). A job that throws or cannot be written becomes a
/// warning (take_warnings(); one per file, however often it fails); it never reaches the caller.
/// Jobs run in the order submitted. The destructor writes what is queued, then joins.
class PlotWriter {
 public:
  PlotWriter();
  ~PlotWriter();
  PlotWriter(const PlotWriter&) = delete;
  PlotWriter& operator=(const PlotWriter&) = delete;

  /// Queues `draw`; its image goes to `path`. Returns at once.
  void submit(std::filesystem::path path, std::function<data::Image()> draw);
  /// Queues writing `text` to `path`. Returns at once.
  void submit_text(std::filesystem::path path, std::string text);
  /// Waits until every queued plot is written (or has failed).
  void wait();
  /// The warnings since the last call ("<file> not written: <reason>"), oldest first.
  std::vector<std::string> take_warnings();

 private:
  struct Job {
    std::filesystem::path path;
    std::function<std::string()> encode;  ///< the file's bytes
  };
  void enqueue(Job job);
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  std::vector<std::string> warnings_;
  std::set<std::filesystem::path> failed_;  // the files warned about
  bool busy_ = false, closing_ = false;
  std::thread thread_;
};

}  // namespace yolotrain::plots
