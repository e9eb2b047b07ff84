#pragma once
// Trainer::Run, everything one training run holds, shared by the files its methods live in:
// trainer.cpp (the loop, steps, epochs, validation), trainer_setup.cpp (data, model, optimizer,
// loaders), trainer_resume.cpp (the run folder and the checkpoint to resume, snapshots, saves).
#include "yolotrain/engine/trainer.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "mixed_precision.hpp"
#include "optimizer.hpp"
#include "progress_line.hpp"
#include "rank_group.hpp"
#include "remote_run.hpp"
#include "run_log.hpp"
#include "run_outputs.hpp"
#include "run_folder.hpp"
#include "training_memory_probe.hpp"
#include "validation.hpp"
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
#include "yolotrain/lifecycle/checkpoint_store.hpp"
#include "yolotrain/lifecycle/cuda_guard.hpp"
#include "yolotrain/lifecycle/folder_lock.hpp"
#include "yolotrain/lifecycle/host_memory.hpp"
#include "yolotrain/lifecycle/pause.hpp"
#include "yolotrain/lifecycle/s3_client.hpp"
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

namespace run_detail {

// Arguments a resumed run may change; everything else comes from the checkpoint, so that the
// resumed run trains exactly as the interrupted one would have.
inline const char* const kResumeOverridable[] = {
    "epochs",        "patience",          "time",          "deadline",     "save_interval", "pause_release",
    "status_interval", "metrics_file",    "workers",       "threads",      "device",        "keep_last",
    "dist_timeout",    "verbose",         "remote",        "remote_timeout", "tensorboard",
    "signal_stop",   "signal_pause",      "signal_resume", "signal_checkpoint", "signal_suspend", "save_period"};

// What args.yaml and checkpoints say for a run on a program's in-memory data.
inline constexpr const char* kMemoryData = "memory";

inline std::string extra(const lc::CheckpointMeta& meta, const std::string& key, const std::string& fallback = "0") {
  const auto it = meta.extra.find(key);
  return it == meta.extra.end() ? fallback : it->second;
}

inline std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);  // hex float: round-trips bit for bit
  return buf;
}

}  // namespace run_detail

// Everything one run holds; Trainer::run() creates it, runs it and throws it away.
struct Trainer::Run {
  Run(TrainConfig cfg, const TrainerCallbacks& cb, lc::ControlToken& token, const std::optional<TrainingData>& given)
      : cfg(std::move(cfg)), cb(cb), token(token), given(given) {}

  TrainConfig cfg;
  TrainerCallbacks cb;  // the program's listeners, then the run's own (TensorBoard)
  lc::ControlToken& token;
  const std::optional<TrainingData>& given;  // a program's in-memory data instead of data=
  RankGroup ranks;  // the other processes of a torchrun launch; a pass-through when alone
  double leader_elapsed = -1;  // rank 0's training time at this epoch's end (all ranks decide alike)
  std::optional<lc::Checkpoint> resume_from;
  fs::path run_dir;
  torch::Device device{torch::kCPU};
  c10::MemoryFormat memory_format = c10::MemoryFormat::Contiguous;
  data::DataConfig data_config;
  data::Dataset train_set, val_set;
  nn::DetectionModel model{nullptr};
  std::unique_ptr<ModelEMA> ema;
  OptimizerChoice choice;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<loss::DetectionLoss> criterion;
  std::unique_ptr<data::Loader> train_loader, val_loader;
  std::unique_ptr<plots::PlotWriter> plot_writer;  // rank 0 with plots=true: pictures off this thread
  std::unique_ptr<lc::CheckpointStore> store;
  std::unique_ptr<lc::RunStatus> status;
  std::unique_ptr<detail::RemoteRun> remote;  // rank 0 with remote=: the run folder mirrored to a bucket
  std::unique_ptr<TensorBoardLogger> tensorboard;  // rank 0 with tensorboard=true
  std::optional<lc::FolderLock> folder_lock;  // rank 0: held for the whole run
  fs::path locked_dir;
  detail::RunLog log;  // the terminal and train.log

  std::int64_t epoch = 0, batch = 0, nb = 1, last_opt_step = -1, best_epoch = -1;
  double best_fitness = -1, elapsed_before = 0;
  std::array<double, 3> tloss{0, 0, 0};
  detail::ResultsCsv results;  // results.csv (its text travels in checkpoints)
  std::optional<EpochMetrics> last_metrics;
  std::int64_t saved_step = -1;
  Clock::time_point started = Clock::now(), last_save = Clock::now();
  std::optional<std::chrono::system_clock::time_point> deadline;
  RunResult result;
  AmpMode amp = AmpMode::Off;
  GradScaler scaler{false};
  // For the progress line: this epoch's timing in this process, the last batch's figures.
  Clock::time_point epoch_started = Clock::now();
  std::int64_t epoch_batches = 0, epoch_images = 0, last_instances = 0, last_size = 0;

  std::int64_t step() const { return epoch * nb + batch; }
  void say(const std::string& line);
  void log_only(const std::string& line);
  void report_problems(const std::string& prefix, const data::ScanReport& report);
  void set_state(lc::RunState s);
  void find_resume_checkpoint();
  fs::path find_resume_checkpoint_leader();
  void lock_run_dir();
  void open_remote(bool fresh);
  void finish_remote();
  void adopt_stored_config();
  void load_data();
  void load_data_yaml();
  void build();
  void restore();
  lc::Checkpoint snapshot(bool completed);
  // force: save even if this step was saved (an epoch's end shares its step number with the
  // position "epoch trained, not validated" saved before validation).
  void checkpoint(bool wait, bool completed = false, bool force = false);
  void freeze_layers();
  void resolve_autobatch();
  at::Tensor multi_scale(const at::Tensor& img, std::int64_t ni) const;
  std::optional<ValidationReport> validation_pass();
  bool plot_validation = false;  // the final validation draws val_batch*.jpg
  void finish_plots();
  void final_eval();
  void report_saved();
  void schedule(std::int64_t ni);
  void optimizer_step();
  bool poll();  // false: leave the loop (stop, or pause with release=exit)
  lc::PauseEnd pause();
  bool share_epoch_end(EpochMetrics& m, bool validated);
  double elapsed() const;
  void train_batch(const data::Batch& b);
  bool validate(EpochMetrics& m);  // false: stopped inside validation
  bool end_epoch(EpochMetrics& m);  // false: training is over
  TrainerProgress progress() const;
  RunResult run();
};

}  // namespace yolotrain::engine
