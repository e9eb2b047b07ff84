#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/lifecycle/files/safetensors.hpp"

namespace yolotrain::lifecycle {


/// The checkpoint file format this build writes; it reads this one and older ones.
constexpr int kCheckpointFormatVersion = 1;

/// What a checkpoint says about itself; readable without loading its tensors.
struct CheckpointMeta {
  int format_version = kCheckpointFormatVersion;
  std::int64_t step = 0;   ///< completed optimizer steps
  std::int64_t epoch = 0;  ///< epoch the next step belongs to
  double wall_time = 0;    ///< seconds since the Unix epoch when the snapshot was taken
  std::string model;       ///< identity of what was trained; a store refuses other models
  std::string config;      ///< the run's configuration text
  std::map<std::string, std::string> extra;  ///< free-form key/values
};

/// A training state: named tensors (model, optimizer, RNG...) plus metadata.
struct Checkpoint {
  CheckpointMeta meta;
  NamedTensors tensors;

  /// The tensor called `name`; throws yolotrain::Error naming the checkpoint's keys if absent.
  const at::Tensor& tensor(const std::string& name) const;
};

/// Copies `live` tensors to host memory for a snapshot, detached from autograd. Buffers in
/// `spare` (e.g. from CheckpointStore::take_spare()) with the same name, shape and dtype are
/// reused, so a periodic snapshot allocates nothing; GPU tensors are copied into pinned memory.
NamedTensors host_snapshot(const NamedTensors& live, NamedTensors spare = {});

/// A checkpoint file that was passed over, and why.
struct SkippedCheckpoint {
  std::filesystem::path path;
  std::string reason;
};

/// What CheckpointStore::load_latest() found.
struct LoadResult {
  std::optional<Checkpoint> checkpoint;    ///< the newest valid one, if any
  std::filesystem::path path;              ///< its file
  std::vector<SkippedCheckpoint> skipped;  ///< newer files that failed verification
};

/// Options of a CheckpointStore.
struct CheckpointStoreOptions {
  std::filesystem::path dir;  ///< the folder (created if missing)
  int keep_last = 2;          ///< rotating checkpoints kept (pinned ones are never rotated)
  std::string model;          ///< identity written into and required of checkpoints ("" = any)
  std::string prefix = "ckpt";  ///< rotating files are "<prefix>-<step>.ytckpt"
  AtomicWriteOptions write;   ///< passed to atomic_write()
};

/// A folder of verified, atomically written checkpoints. Each file carries a format version and
/// SHA-256 checksums of its metadata and its payload; the newest valid file wins on load, and
/// files that fail verification are reported and skipped, never deleted. Rotating saves keep
/// the last `keep_last`; pinned names (e.g. "best") are kept until overwritten.
///
/// save_async() hands a snapshot (tensors already copied to host memory) to a writer thread: at
/// most one write is in flight, a newer request replaces one not yet started, wait() and the
/// destructor finish the write. A failed write is rethrown by the next save/save_async/wait call
/// and stays readable through last_error().
class CheckpointStore {
 public:
  /// Opens (creating) the folder and removes temporaries left by killed processes. Throws
  /// yolotrain::Error if the folder cannot be created or is not a folder.
  explicit CheckpointStore(CheckpointStoreOptions options);
  /// Finishes an in-flight write (errors are reported on stderr, never thrown).
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  /// Called (on the thread that wrote it) with each file once it is complete on disk: a rotating
  /// checkpoint with its step, a pinned one (save_pinned) with step -1. The remote mirror
  /// (remote::mirror_checkpoints) listens here to upload them.
  using WrittenHook = std::function<void(const std::filesystem::path& file, std::int64_t step)>;
  /// From now on, every checkpoint written goes to `hook` too (empty: none).
  void on_written(WrittenHook hook);
  /// Writes a rotating checkpoint now and returns its path.
  std::filesystem::path save(const Checkpoint& checkpoint);
  /// Writes "<name>.ytckpt" (e.g. "best"), outside the rotation.
  std::filesystem::path save_pinned(const Checkpoint& checkpoint, const std::string& name);
  /// Queues a rotating save on the writer thread and returns at once.
  void save_async(Checkpoint snapshot);
  /// Waits until no write is queued or in flight; rethrows a failed write. Returns the path of
  /// the last successful rotating save, if any.
  std::optional<std::filesystem::path> wait();
  /// True while a save is queued or being written.
  bool busy() const;
  /// The tensors of the last snapshot the writer finished with, for host_snapshot() to reuse
  /// (empty if none are free).
  NamedTensors take_spare();

  /// The newest checkpoint that verifies (and is of this store's model), plus what was skipped.
  LoadResult load_latest() const;
  /// Rotating checkpoint files, newest (highest step) first.
  std::vector<std::filesystem::path> checkpoints() const;
  /// The last successful rotating save (the one a resume starts from): path and metadata.
  /// Pinned saves (best) do not change it.
  std::optional<std::pair<std::filesystem::path, CheckpointMeta>> last_saved() const;
  /// How long the last successful rotating save took to encode, write, fsync and rename (seconds;
  /// 0 before the first): part of a run's time to a safe exit.
  double last_write_seconds() const;
  /// The text of the last failed write, if any (kept after it was rethrown).
  std::optional<std::string> last_error() const;
  const CheckpointStoreOptions& options() const { return options_; }

  /// Serialises a checkpoint to the file format.
  static std::string encode(const Checkpoint& checkpoint);
  /// Reads and verifies a file's header and metadata only (fast: no tensors).
  static CheckpointMeta read_meta(const std::filesystem::path& path);
  /// Verifies a whole file's bytes (header, both checksums) without decoding its tensors;
  /// throws yolotrain::Error naming `name` and what is wrong.
  static CheckpointMeta verify(std::string_view bytes, const std::string& name);
  /// Reads and fully verifies a file.
  static Checkpoint load(const std::filesystem::path& path);

 private:
  void write(const Checkpoint& checkpoint, const std::filesystem::path& target) const;
  std::filesystem::path write_rotating(Checkpoint checkpoint);
  void rotate();
  void writer_loop();
  void rethrow_pending_error();
  WrittenHook written_hook() const;
  std::string model_mismatch(const CheckpointMeta& meta) const;

  CheckpointStoreOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Checkpoint> queued_;
  NamedTensors spare_;
  bool writing_ = false;
  bool shutdown_ = false;
  std::exception_ptr pending_error_;
  std::optional<std::string> last_error_;
  std::optional<std::pair<std::filesystem::path, CheckpointMeta>> last_saved_;
  double last_write_s_ = 0;
  WrittenHook on_written_;
  std::thread writer_;
};

}  // namespace yolotrain::lifecycle
