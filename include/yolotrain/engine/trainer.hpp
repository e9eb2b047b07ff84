#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/engine/callback_list.hpp"
#include "yolotrain/engine/cpu_threads.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"

namespace yolotrain::engine {

/// How a run ended.
enum class RunOutcome { Completed, Stopped, Paused, Failed };

/// "completed", "stopped", "paused" or "failed".
const char* to_string(RunOutcome outcome) noexcept;

/// The figures of one epoch by Ultralytics' names (label_loss_items with prefix "train" and
/// "val", the validator's metric keys, "lr/pg0-2"), in results.csv's column order after `epoch`.
/// The task decides them (src/engine/tasks/): detection has train/box_loss, train/cls_loss,
/// train/dfl_loss (l1_loss for a head without DFL, as Ultralytics 8.4 names YOLO26's),
/// metrics/precision(B), metrics/recall(B), metrics/mAP50(B), metrics/mAP50-95(B), the val/ losses
/// and lr/pg0-2; segmentation adds seg_loss and sem_loss and the (M) metrics of the masks.
struct EpochMetrics {
  std::int64_t epoch = 0;  ///< 1-based, as results.csv
  double time = 0;         ///< training seconds at the epoch's end, over every resume (results.csv's `time`)
  double fitness = 0;      ///< not a column of results.csv (as in Ultralytics)
  /// (name, value) in results.csv's order.
  std::vector<std::pair<std::string, double>> figures;

  /// The figures called `names`, each 0.
  static EpochMetrics with_columns(const std::vector<std::string>& names);
  /// ("train/box_loss", ...), ("metrics/mAP50(B)", ...), ..., ("lr/pg2", ...): `figures`.
  std::vector<std::pair<std::string, double>> named() const { return figures; }
  /// Sets the figure called `name` (one of named(), or "fitness"); false when there is none.
  bool set(const std::string& name, double value);
  /// The figure called `name` (one of named(), or "fitness"); nothing when there is none.
  std::optional<double> get(const std::string& name) const;
};

/// Where the training thread spent its time (wall seconds; on CUDA the kernels run
/// asynchronously, so forward/backward/optimizer there count launches plus any synchronisation).
struct StepTimings {
  double data_s = 0;        ///< waiting for the loader's next batch
  double forward_s = 0;     ///< forward pass of the model (cuda_graph: the replay of forward, loss, backward)
  double loss_s = 0;        ///< the loss (assigner included)
  double backward_s = 0;    ///< backward pass
  double optimizer_s = 0;   ///< clipping, optimizer step, EMA update
  double checkpoint_s = 0;  ///< snapshots, and waits for saves to finish
  double validation_s = 0;  ///< validation passes
  std::int64_t steps = 0;   ///< batches trained by this process
  std::int64_t images = 0;  ///< images in those batches
  /// Training images per second over data, forward, loss, backward and optimizer time.
  double images_per_second() const;
};

/// What Trainer::run() returns. A stop or a pause is an outcome, not an error.
struct RunResult {
  RunOutcome outcome = RunOutcome::Completed;
  std::string reason;            ///< "epochs done", "SIGTERM", "deadline", "pause_release=exit", the error...
  int signal = 0;                ///< the signal that stopped the run, if any
  std::int64_t epoch = 0;        ///< the epoch being trained (0-based) when the run ended
  std::int64_t step = 0;         ///< batches trained in all
  std::filesystem::path run_dir;
  std::filesystem::path last_checkpoint;
  std::optional<EpochMetrics> metrics;  ///< the last validation (of best.ytckpt once completed)
  bool peer_lost = false;        ///< another rank died or stopped answering (exit 69)
  /// With remote=: whether every upload (the final checkpoint among them) reached the bucket
  /// within remote_timeout; empty without remote=.
  std::optional<bool> remote_uploaded;
  StepTimings timings;           ///< where this process spent its time
  /// Optimizer steps the gradient scaler skipped because a gradient was inf/NaN (amp=true on
  /// CUDA; counted in this process, not across a resume).
  std::int64_t amp_skipped_steps = 0;
  /// The exit code yolo_train uses: 0 completed, 128+signal, 75 to be resumed, 1 failed,
  /// 69 a rank of a multi-process run was lost (torchrun --max-restarts then resumes).
  int exit_code() const;
};

/// Where a run is, for callbacks.
struct TrainerProgress {
  std::int64_t epoch = 0;   ///< 0-based
  std::int64_t epochs = 0;
  std::int64_t batch = 0;   ///< batches done in this epoch
  std::int64_t batches = 0; ///< batches per epoch
  std::int64_t step = 0;    ///< batches trained in all
  /// The loss's running means of the epoch by term, in the task's order (detection: box_loss,
  /// cls_loss, dfl_loss; segmentation: box_loss, seg_loss, cls_loss, dfl_loss, sem_loss), as read
  /// after step `losses_step`: a step reads nothing back from the device, so the trainer reads them
  /// at most once a second, at an epoch's last step and before a checkpoint (every step with
  /// tensorboard=true).
  std::vector<std::pair<std::string, double>> losses;
  std::int64_t losses_step = 0;  ///< the steps done when `losses` were read
  std::array<double, 3> lr{};  ///< learning rates of the parameter groups (lr/pg0-2)
  std::int64_t instances = 0;  ///< labelled boxes in the last batch
  std::int64_t size = 0;       ///< the last batch's image size in pixels (multi_scale varies it)
  /// This process's part of the epoch: seconds since it began (at the epoch's start, or where a
  /// resumed run came in), and the batches and images trained in them (it/s, ETA, images/s).
  double epoch_seconds = 0;
  std::int64_t timed_batches = 0, timed_images = 0;

  /// ("train/box_loss", ...), ("lr/pg0", ...): the step's figures by the names EpochMetrics::named()
  /// gives them (the running losses, the learning rates).
  std::vector<std::pair<std::string, double>> named() const;
};

/// The events a program that embeds the trainer can listen to. Each holds any number of
/// listeners, called in the order added (`callbacks.on_epoch_end.add(f)`; assigning one replaces
/// the list with it). They run on the training thread at safe points; an exception thrown by one
/// fails the run (with a checkpoint first).
struct TrainerCallbacks {
  CallbackList<const TrainerProgress&> on_train_start;
  /// An epoch (or the rest of a resumed one) begins: yolotrain's progress header listens first.
  CallbackList<const TrainerProgress&> on_train_epoch_start;
  /// After each training step: yolotrain's progress line and status.json's step figures listen
  /// first, then the program's.
  CallbackList<const TrainerProgress&> on_batch_end;
  /// An epoch's figures are complete (its losses, learning rates and validation), before its
  /// checkpoint: yolotrain's own results.csv, results.png, epoch line and status.json figures
  /// listen here first, then the program's (Ultralytics' on_fit_epoch_end).
  CallbackList<const EpochMetrics&> on_fit_epoch_end;
  /// After each epoch's validation (or each epoch when `val=false`) and its checkpoint, with the
  /// epoch's figures.
  CallbackList<const EpochMetrics&> on_epoch_end;
  /// After a validation pass during training, with its figures (P, R, mAPs, validation losses).
  CallbackList<const EpochMetrics&> on_val_end;
  /// A verified checkpoint was written.
  CallbackList<const std::filesystem::path&> on_checkpoint;
  /// The run's state changed (status.json's `state` listens first).
  CallbackList<lifecycle::RunState> on_state_change;
  /// A pause is about to begin (its checkpoint comes next); on_resume when training goes on.
  CallbackList<const TrainerProgress&> on_pause;
  CallbackList<const TrainerProgress&> on_resume;
  /// The run is over (completed, stopped, paused or failed), its pictures written: the last event.
  CallbackList<const RunResult&> on_train_end;
};

/// Trains a YOLO detector (YOLOv8, YOLO11) as Ultralytics' DetectionTrainer does (optimizer groups, warm-up, LR
/// schedule, EMA, accumulation, validation, results.csv, best/last), inside yolotrain's lifecycle:
/// the token is polled every batch and inside validation; stop, pause, checkpoint-now, deadline
/// and time limits all end in a verified checkpoint from which a resumed run continues exactly.
/// Data a program gives the trainer instead of `data=` (a data.yaml): its splits, e.g. from
/// data::memory_dataset() over the program's own SampleSource. The run records `data: memory`;
/// a resume must give the same data again (the same sample at every index: see SampleSource).
struct TrainingData {
  data::Dataset train;
  data::Dataset val;  ///< may be the train split again, as a data.yaml without val
};

class Trainer {
 public:
  explicit Trainer(TrainConfig config, TrainerCallbacks callbacks = {});
  /// Trains on `data` instead of config.data.
  Trainer(TrainConfig config, TrainerCallbacks callbacks, TrainingData data);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Runs (or resumes, per `resume`) until done, stopped, paused with release=exit, or failed.
  /// Throws ConfigError for a usage error found before training starts (arguments, model YAML,
  /// dataset, an occupied or unwritable run folder, a checkpoint that cannot be resumed); any
  /// other failure, during setup too (out of memory, I/O), is a Failed result, with a checkpoint
  /// first once training has started. on_train_end is called on every path, before a throw too.
  RunResult run(lifecycle::ControlToken& token);

  const TrainConfig& config() const { return config_; }

 private:
  struct Run;
  RunResult finish_run(Run& run);  // runs it; its end, failed or not, told to the listeners
  TrainConfig config_;
  TrainerCallbacks callbacks_;
  std::optional<TrainingData> data_;
};

}  // namespace yolotrain::engine
