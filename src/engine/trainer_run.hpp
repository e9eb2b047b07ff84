#pragma once
// Trainer::Run, everything one training run holds, shared by the files its methods live in:
// trainer.cpp (Trainer: a run's plan, its end, failures), trainer_loop.cpp (the loop, steps,
// epochs, validation), trainer_setup.cpp (data, model, optimizer, loaders),
// trainer_checkpoints.cpp (snapshots, saves, the restore). The plan comes first (run_plan.hpp).
#include "yolotrain/engine/trainer.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/types.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "control_run.hpp"
#include "graphed_step.hpp"
#include "mixed_precision.hpp"
#include "multi_tensor.hpp"
#include "optimizer.hpp"
#include "preemption_run.hpp"
#include "progress_line.hpp"
#include "rank_group.hpp"
#include "remote_run.hpp"
#include "run_log.hpp"
#include "run_outputs.hpp"
#include "run_folder.hpp"
#include "run_plan.hpp"
#include "safe_exit.hpp"
#include "step_tally.hpp"
#include "tasks/task.hpp"
#include "train_state.hpp"
#include "training_memory_probe.hpp"
#include "validation.hpp"
#include "yolotrain/data/class_folders.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/rng.hpp"
#include "yolotrain/engine/autobatch.hpp"
#include "yolotrain/engine/model_ema.hpp"
#include "yolotrain/engine/tensorboard_logger.hpp"
#include "yolotrain/dist/process_group.hpp"
#include "yolotrain/dist/watchdog.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/lifecycle/files/folder_lock.hpp"
#include "yolotrain/lifecycle/memory/host_memory.hpp"
#include "yolotrain/lifecycle/control/pause.hpp"
#include "yolotrain/remote/s3_client.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/memory_format.hpp"
#include "yolotrain/nn/weights.hpp"
#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;
namespace lc = lifecycle;
using Clock = std::chrono::steady_clock;

/// Seconds since `t`.
double seconds_since(Clock::time_point t);

// A run's clocks: training time, the last save, the deadline; this epoch's tally for the progress
// line.
struct RunClock {
  Clock::time_point started = Clock::now(), last_save = Clock::now();
  std::optional<std::chrono::system_clock::time_point> deadline;
  double leader_elapsed = -1;  // rank 0's training time at this epoch's end (all ranks decide alike)
  Clock::time_point epoch_started = Clock::now();
  Clock::time_point last_tally_read = Clock::now();
  std::int64_t epoch_batches = 0, epoch_images = 0, last_instances = 0, last_size = 0;
};

// What args.yaml and checkpoints say for a run on a program's in-memory data.
inline constexpr const char* kMemoryData = "memory";

// A run's data: its splits and their loaders.
struct RunData {
  data::DataConfig config;
  data::Dataset train, val;
  std::unique_ptr<data::Loader> train_loader, val_loader;
};

// A NaN/Inf loss or gradient, caught before it reached the weights (trainer_recovery.cpp).
struct NonFiniteTraining : Error {
  using Error::Error;
};

// Out of memory in the first epoch of a fresh run: Trainer::run() starts it again with `batch`
// (trainer_recovery.cpp).
struct BatchTooLarge : Error {
  BatchTooLarge(const std::string& what, std::int64_t half) : Error(what), batch(half) {}
  std::int64_t batch;
};

// Everything one run holds; Trainer::run() resolves its plan, creates it, runs it and throws it
// away.
struct Trainer::Run {
  Run(RunPlan plan, RankGroup ranks, detail::RunLog& log, const TrainerCallbacks& cb, lc::ControlToken& token,
      const std::optional<TrainingData>& given);

  TrainConfig cfg;  // the plan's
  RunPlan plan;     // run folder, its lock, the bucket, the checkpoint to resume (until restored)
  RankGroup ranks;  // the other processes of a torchrun launch; a pass-through when alone
  TrainerCallbacks cb;  // the program's listeners, then the run's own (outputs, TensorBoard)
  lc::ControlToken& token;
  const std::optional<TrainingData>& given;  // a program's in-memory data instead of data=
  detail::RunLog& log;  // the terminal and train.log (rank 0 speaks for the group)
  detail::RunOutputs outputs;  // rank 0's files; the other ranks' write nothing
  std::unique_ptr<detail::ControlRun> control;  // control= and metrics_push=
  std::unique_ptr<detail::PreemptionRun> preemption;  // preemption=: the cloud's notices
  detail::SafeExitClock safe_exit;  // the time from a stop request to a safe exit, measured
  RunData data;
  std::int64_t nb = 1;  // batches per epoch
  // The model and what trains it.
  torch::Device device{torch::kCPU};
  c10::MemoryFormat memory_format = c10::MemoryFormat::Contiguous;
  nn::DetectionModel model{nullptr};
  std::vector<std::string> frozen;  // the frozen modules' name parts (Ultralytics' freeze_layer_names)
  std::unique_ptr<ModelEMA> ema;
  OptimizerChoice choice;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<Task> task;  // the loss, validation and pictures of the model's task
  AmpMode amp = AmpMode::Off;
  GradScaler scaler{false};
  std::unique_ptr<GraphedStep> graphed;  // cuda_graph=: the steps replayed as CUDA graphs
  // Where training stands, and what the run has to say about it.
  TrainState state;  // position, best, running losses (what a checkpoint carries beyond tensors)
  StepTally tally;   // the steps' running losses and NaN/Inf checks on the device, read on a cadence
  std::int64_t injected_nonfinite_step = -1;  // the test seam's NaN (fault_injection.hpp)
  std::int64_t losses_step = 0;  // the steps done when state.loss_means was last read (or restored)
  std::unique_ptr<lc::CheckpointStore> store;
  std::int64_t saved_step = -1;
  std::int64_t start_step = 0;  // where this process began (0, or the resumed step)
  std::optional<EpochMetrics> last_metrics;
  std::optional<lc::Checkpoint> start_snapshot;  // where this process began: a roll-back's last resort
  int recovery_attempts = 0;  // roll-backs since the last clean epoch
  bool started_fresh = false;  // no checkpoint to resume: a first-epoch OOM may restart the run
  int batch_retries = 0;       // restarts with half the batch so far (set by Trainer::run)
  RunClock clock;
  RunResult result;

  std::int64_t step() const { return state.epoch * nb + state.batch; }
  void say(const std::string& line);
  void log_only(const std::string& line);
  void report_problems(const std::string& prefix, const data::ScanReport& report);
  void set_state(lc::RunState s);
  void finish_remote();
  void finish_control() {
    if (control) control->finish();
  }
  void load_data();
  void load_data_yaml();
  void build();
  void build_loaders();
  void restore();
  lc::Checkpoint snapshot(bool completed);
  // force: save even if this step was saved (an epoch's end shares its step number with the
  // position "epoch trained, not validated" saved before validation).
  void checkpoint(bool wait, bool completed = false, bool force = false);
  void freeze_layers();
  void transfer_start_weights(io::ModelWeights& start);
  // Training mode, the frozen layers' BatchNorm kept in eval under 8.4 (its _model_train).
  void train_mode();
  void resolve_autobatch();
  at::Tensor multi_scale(const at::Tensor& img, std::int64_t ni) const;
  std::optional<ValidationReport> validation_pass(bool plots = false);  // plots: val_batch*.jpg
  void finish_plots();
  void final_eval();
  void report_saved();
  // Sets the step's learning rates and momentum; returns the batches it accumulates (schedule_at).
  std::int64_t schedule(std::int64_t ni);
  void optimizer_step();
  /// Forward, loss and backward of a batch, eagerly (the loss's parts timed) or as a CUDA graph's
  /// replay (cuda_graph=); each returns the loss items and notes them in the tally.
  at::Tensor eager_step(const at::Tensor& img, const data::Batch& b, std::int64_t ni);
  at::Tensor graphed_step(const at::Tensor& img, const data::Batch& b, std::int64_t ni);
  nn::HeadOutputs forward(const at::Tensor& img);  // autocast as amp= asks, the heads in float32
  at::Tensor to_backward(const at::Tensor& total);  // scaled (world size, fp16 scaler)
  void set_class_weights();
  void setup_cuda_graph();
  bool poll();  // false: leave the loop (stop, or pause with release=exit)
  void watch_safe_exit();  // each poll: the time to a safe exit published; a cloud's notice acted on
  double eta_seconds() const;  // the training time left, from this process's pace (infinity before a step)
  lc::PauseEnd pause();
  bool share_epoch_end(EpochMetrics& m, bool validated);
  double elapsed() const;
  void train_batch(const data::Batch& b);
  // Self-healing (trainer_recovery.cpp).
  bool tally_due() const;  // the progress line's cadence, an epoch's last step, per-step TensorBoard
  void read_tally();  // the running losses into state; throws NonFiniteTraining on a NaN/Inf step
  void keep_start();
  void roll_back(const std::string& why);
  void out_of_memory(const std::exception& e);  // throws BatchTooLarge when 8.4 would retry, else rethrows
  void repair_ema();
  bool validate(EpochMetrics& m);  // false: stopped inside validation
  bool end_epoch(EpochMetrics& m);  // false: training is over
  TrainerProgress progress() const;
  void set_losses(EpochMetrics& m) const;  // the running losses as train/<term>
  void start();  // data, model, outputs, the resumed position: ready for the first step
  void train();  // the epochs, until done, stopped or paused
  void finish();  // the final checkpoint or validation, the end lines
  RunResult run();  // start, train, finish
  RunResult failed(const std::exception& e);  // where a failure left the run
  RunResult end_failed(const std::exception& e);  // status.json, a checkpoint, the plots, the bucket
  TrainState stored_state() const;  // the checkpoint to resume's
};

}  // namespace yolotrain::engine
