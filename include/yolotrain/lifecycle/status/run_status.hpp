#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace yolotrain::lifecycle {

/// Where a run is.
enum class RunState { Starting, Running, Pausing, Paused, Stopping, Stopped, Completed, Failed };

/// "starting", "running", "pausing", "paused", "stopping", "stopped", "completed", "failed".
const char* to_string(RunState state) noexcept;

/// Resident memory of this process in bytes (from /proc/self/statm), or 0 if unknown.
std::int64_t resident_bytes() noexcept;

/// How a run's mirror to object storage stands (status.json's "remote"; see RemoteMirror).
struct RemoteUploadStatus {
  std::string url;                      ///< s3://bucket/prefix
  std::int64_t last_uploaded_step = -1; ///< newest rotating checkpoint confirmed in the bucket
  std::string last_uploaded;            ///< the last object confirmed (a name under the prefix)
  double last_uploaded_time = 0;        ///< Unix seconds
  std::size_t pending = 0;              ///< uploads waiting or in flight
  std::size_t retries = 0;              ///< transient failures retried so far
  std::string last_error;               ///< "" when the last attempt succeeded
  std::uint64_t bytes = 0;              ///< bytes uploaded
  double seconds = 0;                   ///< time spent uploading them
  double last_checkpoint_seconds = 0;   ///< how long the newest rotating checkpoint's upload took
};

/// A notice that the machine will be taken back (status.json's "notice"; the trainer's preemption=
/// reads them with yolotrain::cloud). Times are Unix seconds.
struct NoticeStatus {
  std::string source;       ///< who gave it: "aws", "gcp", "azure"
  std::string event;        ///< in its words: "spot/instance-action terminate", "Preempt"
  std::string kind;         ///< "reclaim" or "maintenance"
  double seen = 0;          ///< when the run first read it
  double deadline = 0;      ///< when the machine goes
  double planned_stop = 0;  ///< when the run stops with a checkpoint (0: none planned: it finishes first)
};

/// Keeps `status.json` (or any path) up to date: rewritten atomically on every state change,
/// checkpoint and request, and at most every `interval` for progress. A failed write is reported
/// once on stderr and through last_error(); it never interrupts training.
/// Fields: state, pid, step, epoch, started/updated (Unix seconds), last_checkpoint {path, step,
/// time}, requests (what was asked and when), throughput, memory {rss_bytes, cuda...}, error,
/// metrics (free-form numbers such as losses), progressed (Unix time the step last advanced).
/// With set_textfile(), every write also writes a Prometheus textfile (node_exporter's textfile
/// collector) with the same figures. An empty path keeps the figures and writes nothing.
class RunStatus {
 public:
  explicit RunStatus(std::filesystem::path file,
                     std::chrono::milliseconds interval = std::chrono::seconds(5));

  /// Sets the state and writes now.
  void set_state(RunState state);
  RunState state() const;
  /// Records progress; writes if `interval` passed since the last write.
  void set_progress(std::int64_t step, std::int64_t epoch);
  /// Records a throughput figure ("images/s", "steps/s"...).
  void set_throughput(double value, const std::string& unit);
  /// Sets a figure by name (e.g. "loss"; a YOLO run uses results.csv's names): status.json's
  /// `metrics`, the textfile's yolotrain_metric{name="..."}.
  void set_metric(const std::string& name, double value);
  /// Records the newest checkpoint and writes now.
  void set_checkpoint(const std::filesystem::path& path, std::int64_t step, double wall_time);
  /// Records a request that was seen ("SIGUSR1: pause") and writes now.
  void note_request(const std::string& request);
  /// Records an error (the run failed, or a checkpoint write failed) and writes now.
  void set_error(const std::string& message);
  /// Also writes the figures as a Prometheus textfile at `path` (atomically, on every write),
  /// labelled run="<run>" (default: the folder holding the status file). Empty path: off.
  void set_textfile(const std::filesystem::path& path, const std::string& run = "");
  /// Records the state of the run's remote mirror and writes now.
  void set_remote(const RemoteUploadStatus& remote);
  /// Records a notice that the machine will be taken back (or a change of its planned stop) and
  /// writes now.
  void set_notice(const NoticeStatus& notice);
  /// Records the measured time from a stop request to a safe exit (the step in flight, a snapshot,
  /// its write, fsync and rename, the upload: the program's measurement). With the newest
  /// checkpoint's age and the steps done since it, status.json's "exit_cost" — what a kill now
  /// would lose and how much warning a graceful stop needs — and /metrics'
  /// yolotrain_safe_exit_seconds, yolotrain_checkpoint_age_seconds, yolotrain_steps_at_risk.
  void set_safe_exit(double seconds);
  /// Labels the Prometheus figures run="<run>" (set_textfile's label; default: the folder holding
  /// the status file, "" without one).
  void set_run_label(const std::string& run);
  /// Writes now.
  void write();
  /// Writes if `interval` passed since the last write.
  void maybe_write();

  /// The document status.json holds, as its text (what GET /v1/status of a control endpoint answers).
  std::string json() const;
  /// The same figures in Prometheus' text exposition (the textfile's content; GET /metrics).
  std::string prometheus() const;
  /// The step last recorded by set_progress().
  std::int64_t step() const;
  /// How many checkpoints set_checkpoint() has recorded so far.
  std::uint64_t checkpoints() const;

  const std::filesystem::path& path() const { return file_; }
  std::optional<std::string> last_error() const;

 private:
  void write_locked();
  std::string json_locked() const;

  std::filesystem::path file_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  RunState state_ = RunState::Starting;
  std::int64_t step_ = 0, epoch_ = 0;
  double started_ = 0, progressed_ = 0;
  std::filesystem::path textfile_;
  std::string run_label_;
  std::chrono::steady_clock::time_point last_write_{};
  std::optional<std::pair<double, std::string>> throughput_;
  std::map<std::string, double> metrics_;
  std::optional<std::string> checkpoint_path_;
  std::int64_t checkpoint_step_ = 0;
  std::uint64_t checkpoints_ = 0;
  double checkpoint_time_ = 0;
  std::vector<std::pair<double, std::string>> requests_;
  std::optional<std::string> error_;
  std::optional<RemoteUploadStatus> remote_;
  std::optional<NoticeStatus> notice_;
  std::optional<double> safe_exit_s_;
  std::optional<std::string> write_error_;
};

}  // namespace yolotrain::lifecycle
