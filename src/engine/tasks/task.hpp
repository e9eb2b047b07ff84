#pragma once
// What is specific to a task (detection; segmentation and pose next) or to a model family's
// recipe, behind the one interface the training loop calls: the loss with its named terms and
// its own resumable state, the validation and the figures it gives the epoch, the pictures drawn
// from training batches and from a validation. The loop (trainer_loop.cpp) knows no task; adding
// one is a class here and a line in make_task() (docs/architecture.md, "Adding a task").
#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../validation.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/plots/plot_writer.hpp"

namespace yolotrain::engine {

class Task {
 public:
  virtual ~Task() = default;

  /// The loss's terms in order (detection: box_loss, cls_loss, dfl_loss): results.csv's
  /// train/<term> and val/<term> columns, status.json's and the progress line's losses.
  virtual const std::vector<std::string>& loss_terms() const = 0;
  /// The loss of a training batch on the model's raw outputs (both branches of an end-to-end
  /// head): `total` with gradient, `items` one detached value per term.
  virtual loss::LossOutput loss(const nn::HeadOutputs& outputs, const data::Batch& batch,
                                torch::Device device) const = 0;
  /// An epoch begins: a loss whose weights change per epoch follows here.
  virtual void start_epoch(std::int64_t epoch, std::int64_t epochs) {
    (void)epoch;
    (void)epochs;
  }
  /// The task's own state for a checkpoint (TrainState::task, "task.<key>" in the file) and
  /// back; what restore() does not find it must name in an Error.
  virtual std::map<std::string, std::string> state() const { return {}; }
  virtual void restore(const std::map<std::string, std::string>& state) { (void)state; }

  /// One validation pass with the task's loss (nothing when a stop came inside it).
  virtual std::optional<ValidationReport> validate(ValidationPass pass) const = 0;
  /// The validation's figures into the epoch's (metrics/*, val/*, fitness).
  virtual void fill_validation(EpochMetrics& m, const ValidationReport& report) const = 0;

  /// train_batchN.jpg: a training batch with its labels.
  virtual void plot_training_batch(plots::PlotWriter& writer, const data::Batch& batch,
                                   const std::vector<std::string>& names, const std::filesystem::path& dir) const = 0;
  /// What a final validation draws (curves, confusion matrix).
  virtual void plot_validation(plots::PlotWriter& writer, const ValidationReport& report,
                               const std::filesystem::path& dir) const = 0;
};

/// The task `model`'s head trains for, with the run's loss gains and recipe (compat=): detection
/// for YOLOv8 / YOLO11 / YOLO26.
std::unique_ptr<Task> make_task(const nn::DetectionModel& model, const TrainConfig& cfg);

}  // namespace yolotrain::engine
