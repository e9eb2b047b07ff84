#include "yolotrain/plots/plot_writer.hpp"

#include <string_view>

#include "yolotrain/lifecycle/atomic_file.hpp"

namespace yolotrain::plots {

PlotWriter::PlotWriter() : thread_([this] { run(); }) {}

PlotWriter::~PlotWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void PlotWriter::submit(std::filesystem::path path, std::function<data::Image()> draw) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(path), std::move(draw)});
  }
  changed_.notify_all();
}

void PlotWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

std::vector<std::string> PlotWriter::take_warnings() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

void PlotWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and everything queued is written
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::string warning;
    try {
      const data::Image image = job.draw();
      const bool png = job.path.extension() == ".png";
      const std::vector<std::uint8_t> bytes = png ? data::encode_png(image) : data::encode_jpeg(image, 90);
      lifecycle::atomic_write(job.path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    } catch (const std::exception& e) {
      warning = job.path.filename().string() + " not written: " + e.what();
    }
    lock.lock();
    if (!warning.empty()) warnings_.push_back(warning);
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace yolotrain::plots
