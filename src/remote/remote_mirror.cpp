#include "yolotrain/remote/remote_mirror.hpp"

#include <algorithm>
#include <iostream>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::remote {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kUploadNice = 10;  // the upload thread's niceness, above the training threads' 0

double seconds_since_unix_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_checkpoint(const std::string& name) {
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".ytckpt") == 0;
}

// The step of `key` when it is "<series_key>-<digits>.ytckpt".
std::optional<std::int64_t> series_step(const std::string& key, const std::string& series_key) {
  const std::string head = series_key + "-";
  if (key.rfind(head, 0) != 0 || !is_checkpoint(key)) return std::nullopt;
  const std::string digits = key.substr(head.size(), key.size() - head.size() - 7);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoll(digits);
}

// The file's bytes, or nothing when it is gone (superseded locally); other read errors throw.
std::optional<std::string> file_bytes_if_present(const fs::path& file) {
  try {
    return lifecycle::read_file(file);
  } catch (const yolotrain::Error&) {
    std::error_code ec;
    if (!fs::exists(file, ec)) return std::nullopt;
    throw;
  }
}

}  // namespace

RemoteMirror::RemoteMirror(S3Client client, S3Location location, fs::path root, RemoteMirrorOptions options)
    : client_(std::move(client)), location_(std::move(location)), root_(std::move(root)), options_(options) {
  if (options_.keep_last < 1) throw yolotrain::Error("RemoteMirror: keep_last must be >= 1");
  status_.url = location_.url();
  worker_ = std::thread([this] { worker_loop(); });
}

RemoteMirror::~RemoteMirror() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  cancel_ = true;
  cv_.notify_all();
  worker_.join();
}

std::string RemoteMirror::remote_name(const fs::path& file) const {
  const fs::path relative = file.lexically_normal().lexically_relative(root_.lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return file.filename().generic_string();
  return relative.generic_string();
}

void RemoteMirror::upload_checkpoint(const fs::path& file, std::int64_t step) {
  enqueue({file, remote_name(file), step});
}

void RemoteMirror::upload_file(const fs::path& file) { enqueue({file, remote_name(file), -1}); }

void mirror_checkpoints(lifecycle::CheckpointStore& store, std::shared_ptr<RemoteMirror> mirror) {
  store.on_written([mirror = std::move(mirror)](const fs::path& file, std::int64_t step) {
    if (step >= 0) mirror->upload_checkpoint(file, step);
    else mirror->upload_file(file);
  });
}

void RemoteMirror::enqueue(Job job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A newer rotating checkpoint supersedes a waiting one; a file a waiting upload of itself. A
    // checkpoint goes first in line: it is what a kill (a reclaimed machine) would cost.
    const bool rotating = job.step >= 0;
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                [&](const Job& q) { return rotating ? q.step >= 0 : q.name == job.name; }),
                 queue_.end());
    if (rotating) {
      queue_.push_front(std::move(job));
    } else {
      queue_.push_back(std::move(job));
    }
    status_.pending = queue_.size() + (in_flight_ ? 1 : 0);
  }
  cv_.notify_all();
}

void RemoteMirror::set_listener(std::function<void(const lifecycle::RemoteUploadStatus&)> listener) {
  std::lock_guard<std::mutex> calling(listener_mutex_);  // waits for a call in progress
  listener_ = std::move(listener);
}

lifecycle::RemoteUploadStatus RemoteMirror::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void RemoteMirror::notify() {
  std::lock_guard<std::mutex> calling(listener_mutex_);
  if (listener_) listener_(status());
}

void RemoteMirror::worker_loop() {
  lifecycle::block_lifecycle_signals_in_this_thread();
  // Uploads are background work: this thread yields the CPU to training (Linux: a thread's nice).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kUploadNice);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait_until(lock, retry_at_, [this] { return shutdown_ || (!queue_.empty() && Clock::now() >= retry_at_); });
    if (shutdown_) return;
    if (queue_.empty() || Clock::now() < retry_at_) {
      cv_.wait(lock, [this] { return shutdown_ || !queue_.empty(); });
      continue;
    }
    in_flight_ = std::move(queue_.front());
    queue_.pop_front();
    const Job job = *in_flight_;
    lock.unlock();
    bool retry = false, cancelled = false;
    std::string error;
    const auto t0 = Clock::now();
    try {
      upload(job);
    } catch (const S3Error& e) {
      error = e.what();
      cancelled = e.code == "cancelled";
      retry = e.transient && !cancel_;
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    in_flight_.reset();
    if (error.empty()) {
      backoff_s_ = 0;
      status_.last_error.clear();
      status_.last_uploaded = job.name;
      status_.last_uploaded_time = seconds_since_unix_epoch();
      if (job.step >= 0) status_.last_uploaded_step = std::max(status_.last_uploaded_step, job.step);
      const double took = std::chrono::duration<double>(Clock::now() - t0).count();
      status_.seconds += took;
      if (job.step >= 0) status_.last_checkpoint_seconds = took;
    } else {
      status_.last_error = error;
      const bool superseded = std::any_of(queue_.begin(), queue_.end(), [&](const Job& q) {
        return job.step >= 0 ? q.step >= 0 : q.name == job.name;
      });
      if (retry && !superseded) {
        ++status_.retries;
        const double cap =
            finishing_ ? std::min(1.0, options_.backoff_max_s) : options_.backoff_max_s;  // a stop is short
        backoff_s_ = backoff_s_ == 0 ? options_.backoff_initial_s : std::min(backoff_s_ * 2, cap);
        retry_at_ =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(backoff_s_));
        queue_.push_front(job);
      }
    }
    status_.pending = queue_.size();
    lock.unlock();
    if (!error.empty() && !retry && !cancelled)
      std::cerr << "yolotrain: remote: " << error << " (not retried)" << std::endl;
    notify();
    lock.lock();
    cv_.notify_all();
  }
}

void RemoteMirror::upload(const Job& job) {
  const std::optional<std::string> bytes = file_bytes_if_present(job.file);
  if (!bytes) return;  // removed locally: a newer one superseded it
  if (is_checkpoint(job.name)) lifecycle::CheckpointStore::verify(*bytes, job.file.string());
  client_.put_object(location_.key(job.name), *bytes, &cancel_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.bytes += bytes->size();
  }
  if (job.step < 0) return;
  try {
    rotate(job);
  } catch (const std::exception& e) {  // the upload stands; the next checkpoint's rotation tries again
    std::cerr << "yolotrain: remote: keep_last: " << e.what() << std::endl;
  }
}

// The bucket keeps the newest keep_last of the uploaded checkpoint's series; older ones go only
// now that the newer one is confirmed.
void RemoteMirror::rotate(const Job& uploaded) {
  const std::string name = uploaded.name;
  const auto dash = name.rfind('-');
  if (dash == std::string::npos) return;
  const std::string series = name.substr(0, dash);
  const auto found = list_remote_checkpoints(client_, location_, series);
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (static_cast<int>(i) >= options_.keep_last && found[i].step < uploaded.step) client_.delete_object(found[i].key);
  }
}

RemoteFinish RemoteMirror::finish(double timeout_s) {
  const auto t0 = Clock::now();
  const auto until = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::unique_lock<std::mutex> lock(mutex_);
  retry_at_ = Clock::now();  // a stop retries at once rather than after the backoff
  backoff_s_ = 0;
  finishing_ = true;
  cv_.notify_all();
  cv_.wait_until(lock, until, [this] { return queue_.empty() && !in_flight_; });
  RemoteFinish out;
  out.complete = queue_.empty() && !in_flight_;
  if (in_flight_) out.not_uploaded.push_back(in_flight_->name);
  for (const auto& job : queue_) out.not_uploaded.push_back(job.name);
  out.last_error = status_.last_error;
  out.last_uploaded_step = status_.last_uploaded_step;
  out.waited_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!out.complete) {  // abandon them: the process is about to leave
    queue_.clear();
    cancel_ = true;
    cv_.wait_for(lock, std::chrono::seconds(3), [this] { return !in_flight_; });
    cancel_ = false;
  }
  finishing_ = false;
  return out;
}

std::vector<RemoteCheckpoint> list_remote_checkpoints(const S3Client& client, const S3Location& location,
                                                      const std::string& series) {
  const std::string series_key = location.key(series);
  std::vector<RemoteCheckpoint> out;
  for (const auto& object : client.list_objects(series_key + "-")) {
    if (auto step = series_step(object.key, series_key)) out.push_back({object.key, *step});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  return out;
}

RemoteFetch fetch_latest_checkpoint(const S3Client& client, const S3Location& location, const fs::path& root,
                                    const std::string& series, std::int64_t after_step) {
  RemoteFetch out;
  for (const auto& found : list_remote_checkpoints(client, location, series)) {
    if (found.step <= after_step) break;
    const std::string url = "s3://" + client.bucket() + "/" + found.key;
    const std::string bytes = client.get_object(found.key);
    try {
      lifecycle::CheckpointStore::verify(bytes, url);
    } catch (const yolotrain::Error& e) {
      out.skipped.push_back({url, e.what()});
      continue;
    }
    const fs::path local = root / found.key.substr(location.key("").size());
    fs::create_directories(local.parent_path());
    lifecycle::atomic_write(local, bytes);
    out.path = local;
    out.step = found.step;
    return out;
  }
  return out;
}

bool fetch_file(const S3Client& client, const S3Location& location, const fs::path& root, const std::string& name) {
  std::string bytes;
  try {
    bytes = client.get_object(location.key(name));
  } catch (const S3Error& e) {
    if (e.code == "NoSuchKey" || e.http_status == 404) return false;
    throw;
  }
  if (is_checkpoint(name))
    lifecycle::CheckpointStore::verify(bytes, "s3://" + client.bucket() + "/" + location.key(name));
  const fs::path local = root / name;
  fs::create_directories(local.parent_path());
  lifecycle::atomic_write(local, bytes);
  return true;
}

}  // namespace yolotrain::remote
