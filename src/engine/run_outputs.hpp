#pragma once
// A run's own outputs as listeners of the trainer's events, ahead of the program's: the progress
// header and line, results.csv and results.png, the epoch's line on the terminal and in
// train.log, and status.json (with the Prometheus file RunStatus writes beside it).
#include <filesystem>
#include <string>

#include "run_log.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/lifecycle/run_status.hpp"
#include "yolotrain/plots/plot_writer.hpp"

namespace yolotrain::engine {

/// results.csv's header line (Ultralytics' columns, each right-aligned in 23 characters).
std::string results_csv_header();
/// One results.csv row for `m`, formatted as Ultralytics does (%23.5g).
std::string results_csv_row(const EpochMetrics& m);

namespace detail {

/// results.csv of a run folder: a row per epoch, rewritten atomically, results.png drawn from it
/// (when `plots` is given). Its text travels in the checkpoints, so a resumed run continues it.
class ResultsCsv {
 public:
  explicit ResultsCsv(std::filesystem::path run_dir = {}) : run_dir_(std::move(run_dir)) {}
  /// The text a checkpoint carried.
  void restore(std::string text) { text_ = std::move(text); }
  const std::string& text() const { return text_; }
  /// Appends `m`'s row, writes results.csv and queues results.png.
  void add(const EpochMetrics& m, plots::PlotWriter* plots);

 private:
  std::filesystem::path run_dir_;
  std::string text_;
};

/// What yolotrain's own listeners write to.
struct RunOutputs {
  ResultsCsv* results = nullptr;
  plots::PlotWriter* plots = nullptr;  ///< null: no results.png
  lifecycle::RunStatus* status = nullptr;
  RunLog* log = nullptr;               ///< the terminal and train.log
  std::int64_t epochs = 0;
  bool verbose = true;                 ///< the progress header and line
};

/// `program`'s callbacks with yolotrain's own outputs listening ahead of the program's listeners:
/// on_train_epoch_start the progress header; on_batch_end the progress line and status.json's
/// step figures (the running losses and learning rates by name, images/s, step); on_fit_epoch_end
/// results.csv + results.png, the epoch's line and status.json's figures (every
/// EpochMetrics::named() figure and fitness); on_state_change status.json's state.
TrainerCallbacks with_run_outputs(const RunOutputs& to, const TrainerCallbacks& program);

}  // namespace detail
}  // namespace yolotrain::engine
