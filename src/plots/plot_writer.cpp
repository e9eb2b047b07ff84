#include "yolotrain/plots/plot_writer.hpp"

#include "yolotrain/lifecycle/files/atomic_file.hpp"

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
  const bool png = path.extension() == ".png";
  enqueue({std::move(path), [png, draw = std::move(draw)] {
             const data::Image image = draw();
             const std::vector<std::uint8_t> bytes = png ? data::encode_png(image) : data::encode_jpeg(image, 90);
             return std::string(bytes.begin(), bytes.end());
           }});
}

void PlotWriter::submit_text(std::filesystem::path path, std::string text) {
  enqueue({std::move(path), [text = std::move(text)] { return text; }});
}

void PlotWriter::enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
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
      lifecycle::atomic_write(job.path, job.encode());
    } catch (const std::exception& e) {
      warning = job.path.filename().string() + " not written: " + e.what();
    }
    lock.lock();
    if (!warning.empty() && failed_.insert(job.path).second) warnings_.push_back(warning);
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace yolotrain::plots
