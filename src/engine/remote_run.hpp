#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "yolotrain/remote/remote_mirror.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::engine::detail {

/// A training run's mirror to object storage (remote=s3://BUCKET/PREFIX): the bucket checked
/// before any training, a resume from it, the run's files uploaded as they change, and the
/// bounded wait for the last upload when the run ends. Rank 0 only.
class RemoteRun {
 public:
  using Say = std::function<void(const std::string&)>;

  /// Opens `url` for the run folder `run_dir`: reads the AWS environment and checks the bucket
  /// answers to it. Throws ConfigError naming the bucket and the reason (no credential printed).
  RemoteRun(const std::string& url, const std::filesystem::path& run_dir, int keep_last, Say say);
  /// Detaches status.json (uploads still queued are cancelled by the mirror's owner).
  ~RemoteRun();
  RemoteRun(const RemoteRun&) = delete;
  RemoteRun& operator=(const RemoteRun&) = delete;

  /// A fresh run must not write into a prefix that holds another run's checkpoints: throws
  /// ConfigError saying how to resume it instead.
  void refuse_existing_run() const;
  /// Downloads the newest remote checkpoint newer than `local_step` that verifies (and the run's
  /// best.ytckpt) into the run folder; returns its path, or "" when the bucket has none newer.
  std::filesystem::path fetch_newer(std::int64_t local_step);
  /// The mirror the run's CheckpointStore hands its checkpoints to.
  std::shared_ptr<yolotrain::remote::RemoteMirror> mirror() const { return mirror_; }
  /// status.json's "remote" follows the mirror from now on.
  void report_to(lifecycle::RunStatus& status);
  /// Queues results.csv, args.yaml and status.json (those that exist).
  void upload_run_files();
  /// Queues status.json, waits for every upload at most `timeout_s` and says whether the last
  /// checkpoint reached the bucket. True when everything did.
  bool finish(double timeout_s, const std::filesystem::path& last_checkpoint);

 private:
  std::filesystem::path run_dir_;
  Say say_;
  std::shared_ptr<yolotrain::remote::RemoteMirror> mirror_;
};

}  // namespace yolotrain::engine::detail
