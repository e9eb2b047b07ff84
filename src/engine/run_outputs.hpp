#pragma once
// A run's outputs at each epoch's end, as listeners of TrainerCallbacks::on_fit_epoch_end (an
// epoch's figures complete, before its checkpoint): results.csv and results.png, the epoch's
// line on the terminal and in train.log, and its figures in status.json (and the Prometheus file).
#include <filesystem>
#include <functional>
#include <string>

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

/// What the epoch-end listeners write to.
struct EpochOutputs {
  ResultsCsv* results = nullptr;
  plots::PlotWriter* plots = nullptr;  ///< null: no results.png
  lifecycle::RunStatus* status = nullptr;
  std::function<void(const std::string&)> say;  ///< the terminal and train.log
  std::int64_t epochs = 0;
};

/// yolotrain's epoch-end listeners, ahead of `program`'s own: results.csv + results.png, the
/// epoch's line, status.json's figures (precision, recall, map50, map50_95, fitness).
CallbackList<const EpochMetrics&> epoch_outputs(const EpochOutputs& to,
                                                const CallbackList<const EpochMetrics&>& program);

}  // namespace detail
}  // namespace yolotrain::engine
