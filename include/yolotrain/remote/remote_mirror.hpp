#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"
#include "yolotrain/remote/s3_client.hpp"

namespace yolotrain::remote {

/// Options of a RemoteMirror.
struct RemoteMirrorOptions {
  int keep_last = 2;               ///< rotating checkpoints kept in the bucket
  double backoff_initial_s = 0.5;  ///< first wait after a transient failure; doubles each time
  double backoff_max_s = 30;       ///< the longest wait between two attempts
};

/// What RemoteMirror::finish() found.
struct RemoteFinish {
  bool complete = true;                   ///< everything handed over is in the bucket
  std::vector<std::string> not_uploaded;  ///< names still waiting or in flight when the time ran out
  std::string last_error;                 ///< the last failure, "" if none
  std::int64_t last_uploaded_step = -1;   ///< newest rotating checkpoint in the bucket
  double waited_s = 0;
};

/// A local folder mirrored to `s3://bucket/prefix`: a file `root/a/b` becomes the object
/// `prefix/a/b`. Uploads run on a thread of their own; handing a file over never blocks.
/// - upload_checkpoint(): a rotating checkpoint, first in line; it supersedes one still waiting, and
///   once it is confirmed the bucket keeps the newest keep_last of its series (older ones deleted
///   only then).
/// - upload_file(): any other file (best.ytckpt, results.csv...); it supersedes a waiting upload
///   of the same name. Files are read when their upload starts (a file gone by then was
///   superseded locally); `.ytckpt` files are verified first (checksums) and never uploaded torn.
/// Transient failures (no connection, timeouts, 5xx, throttling) are retried with exponential
/// backoff, for as long as the mirror lives; others are reported and the upload dropped (the next
/// checkpoint tries again). status() and the listener tell how it stands.
class RemoteMirror {
 public:
  RemoteMirror(S3Client client, S3Location location, std::filesystem::path root, RemoteMirrorOptions options = {});
  /// Cancels what is in flight and stops the thread (use finish() first to wait).
  ~RemoteMirror();
  RemoteMirror(const RemoteMirror&) = delete;
  RemoteMirror& operator=(const RemoteMirror&) = delete;

  /// Queues a rotating checkpoint (its step orders the series).
  void upload_checkpoint(const std::filesystem::path& file, std::int64_t step);
  /// Queues any other file under root.
  void upload_file(const std::filesystem::path& file);
  /// Waits until every queued upload is confirmed, or `timeout_s` passed; then cancels what is
  /// left (later uploads still work: finish() may be called again).
  RemoteFinish finish(double timeout_s);
  /// How it stands now.
  lifecycle::RemoteUploadStatus status() const;
  /// Called (on the upload thread) after every change of status(); set_listener() returns once
  /// no call of the previous listener is running.
  void set_listener(std::function<void(const lifecycle::RemoteUploadStatus&)> listener);

  /// The name (relative to root, '/'-separated) `file` has in the bucket under the prefix.
  std::string remote_name(const std::filesystem::path& file) const;
  const S3Location& location() const { return location_; }
  const S3Client& client() const { return client_; }

 private:
  struct Job {
    std::filesystem::path file;
    std::string name;
    std::int64_t step = -1;  ///< >= 0: a rotating checkpoint
  };
  void enqueue(Job job);
  void worker_loop();
  void upload(const Job& job);
  void rotate(const Job& uploaded);
  void notify();

  S3Client client_;
  S3Location location_;
  std::filesystem::path root_;
  RemoteMirrorOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::optional<Job> in_flight_;
  std::chrono::steady_clock::time_point retry_at_{};
  double backoff_s_ = 0;
  bool finishing_ = false;  // finish() is waiting: retries at most a second apart
  lifecycle::RemoteUploadStatus status_;
  std::mutex listener_mutex_;  // held while the listener runs; set_listener() waits for it
  std::function<void(const lifecycle::RemoteUploadStatus&)> listener_;
  std::atomic<bool> cancel_{false};
  bool shutdown_ = false;
  std::thread worker_;
};

/// From now on, every checkpoint `store` writes goes to `mirror` once it is on disk: a rotating
/// one with upload_checkpoint(), a pinned one (best, epochN) with upload_file(). The store's
/// lifecycle::CheckpointStore::on_written hook holds the mirror.
void mirror_checkpoints(lifecycle::CheckpointStore& store, std::shared_ptr<RemoteMirror> mirror);

/// A rotating checkpoint in the bucket.
struct RemoteCheckpoint {
  std::string key;
  std::int64_t step = 0;
};

/// The rotating checkpoints `<series>-<step>.ytckpt` (series e.g. "weights/last") under the
/// location's prefix, newest (highest step) first.
std::vector<RemoteCheckpoint> list_remote_checkpoints(const S3Client& client, const S3Location& location,
                                                      const std::string& series);

/// What fetch_latest_checkpoint() found.
struct RemoteFetch {
  std::optional<std::filesystem::path> path;  ///< the local copy of the newest that verifies
  std::int64_t step = -1;
  std::vector<lifecycle::SkippedCheckpoint> skipped;     ///< newer objects that failed verification (s3:// paths)
};

/// Downloads the newest rotating checkpoint of `series` newer than `after_step` that verifies
/// (its SHA-256 checksums) and writes it atomically to `root/<series>-<step>.ytckpt`; a damaged
/// newer one is skipped and reported, as lifecycle::CheckpointStore::load_latest() does locally.
RemoteFetch fetch_latest_checkpoint(const S3Client& client, const S3Location& location,
                                    const std::filesystem::path& root, const std::string& series,
                                    std::int64_t after_step = -1);

/// Downloads the object `name` to `root/name` (atomically; a `.ytckpt` is verified first) if the
/// bucket has it; false when it does not. Throws S3Error / yolotrain::Error otherwise.
bool fetch_file(const S3Client& client, const S3Location& location, const std::filesystem::path& root,
                const std::string& name);

}  // namespace yolotrain::remote
