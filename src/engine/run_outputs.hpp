#pragma once
// A run's own outputs, rank 0's by construction, as listeners of the trainer's events ahead of
// the program's: the progress header and line, results.csv and results.png, the epoch's line on
// the terminal and in train.log, status.json (with the Prometheus file RunStatus writes beside
// it), TensorBoard.
#include <filesystem>
#include <memory>
#include <string>

#include "results_csv.hpp"
#include "run_log.hpp"
#include "yolotrain/engine/tensorboard_logger.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/lifecycle/status/run_status.hpp"
#include "yolotrain/plots/plot_writer.hpp"

namespace yolotrain::engine::detail {

/// The files a run writes besides its checkpoints and train.log: args.yaml, results.csv and
/// results.png, status.json (and metrics_file=), the pictures, TensorBoard's event file. Only rank 0 has them:
/// for any other rank open_run_outputs() gives a set that writes nothing, so no listener needs to
/// know its rank.
struct RunOutputs {
  ResultsCsv results;                              ///< rank 0: results.csv; others: the text only
  std::unique_ptr<lifecycle::RunStatus> status;    ///< rank 0: status.json; others: no file
  std::unique_ptr<plots::PlotWriter> plots;        ///< rank 0 with plots=true; else null
  std::unique_ptr<TensorBoardLogger> tensorboard;  ///< rank 0 with tensorboard=true; else null
};

/// The outputs of a run at `step`, `epochs_done` epochs in (a resumed run's TensorBoard stream continues there),
/// whose results.csv so far is `results_text`; rank 0's args.yaml is written now, from `cfg`.
RunOutputs open_run_outputs(bool leader, const std::filesystem::path& run_dir, const TrainConfig& cfg,
                            std::int64_t step, std::int64_t epochs_done, std::string results_text);

/// `program`'s callbacks with the run's own outputs listening ahead of the program's listeners:
/// on_train_epoch_start the progress header; on_batch_end the progress line and status.json's
/// step figures (the running losses and learning rates by name, images/s, step); on_fit_epoch_end
/// results.csv + results.png, the epoch's line and status.json's figures (every
/// EpochMetrics::named() figure and fitness); on_state_change status.json's state; TensorBoard's
/// events.
TrainerCallbacks with_run_outputs(RunOutputs& to, RunLog& log, const TrainConfig& cfg, const TrainerCallbacks& program);

}  // namespace yolotrain::engine::detail
