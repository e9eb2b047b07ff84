#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "yolotrain/engine/trainer.hpp"

namespace yolotrain::engine {

/// Writes a run's TensorBoard event file, `events.out.tfevents.<time>.<host>` in the run folder
/// (`tensorboard=true`; Ultralytics' setting name): as a listener of the trainer's events, every
/// epoch's metrics by their names (`train/box_loss`, `metrics/mAP50(B)`, `lr/pg0`... at step =
/// the epoch, as results.csv numbers it), and per training step the running losses and learning
/// rates (`step/train/box_loss`, `step/lr/pg0`... at the global step), and when the run ends its
/// pictures that exist (results.png, val_batch0_pred.jpg, PR_curve.png; add_picture() for
/// others). A resumed run continues the same file: the records a previous process wrote
/// after the resumed position are dropped first, so no tag has a duplicate or backward step.
class TensorBoardLogger {
 public:
  /// Opens the newest event file in `dir` (or starts one) for a run at `step` (global steps
  /// done) and `epochs_done` (epochs finished).
  TensorBoardLogger(const std::filesystem::path& dir, std::int64_t step = 0, std::int64_t epochs_done = 0);
  TensorBoardLogger(const TensorBoardLogger&) = delete;
  TensorBoardLogger& operator=(const TensorBoardLogger&) = delete;

  /// Appends a scalar.
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  /// Appends a PNG or JPEG file as an image (tag "images/<file name>"); false when it does not
  /// exist or does not decode.
  bool add_picture(const std::filesystem::path& picture, std::int64_t step);
  /// Adds this logger's listeners to `callbacks` (it must outlive their calls).
  void listen(TrainerCallbacks& callbacks);
  /// The event file.
  const std::filesystem::path& path() const { return path_; }

 private:
  void append(const std::string& event);

  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace yolotrain::engine
