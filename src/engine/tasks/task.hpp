#pragma once
// What is specific to a task (detection, segmentation; pose next) or to a model family's
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
#include "yolotrain/data/data_config.hpp"
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
  /// The validator's metric keys (Ultralytics' DetMetrics.keys: metrics/precision(B), ...):
  /// results.csv's metrics/ columns.
  virtual std::vector<std::string> metric_keys() const = 0;
  /// The loss of a training batch on the model's raw outputs (both branches of an end-to-end
  /// head): `total` with gradient, `items` one detached value per term.
  virtual loss::LossOutput loss(const nn::HeadOutputs& outputs, const data::Batch& batch,
                                torch::Device device) const = 0;
  /// The loaders' options for this task's labels, given the splits they read (segmentation: the
  /// masks at mask_ratio, polygons required); the training and validation loaders both take them.
  virtual void configure_loaders(data::LoaderOptions& options, const data::Dataset& train,
                                 const data::Dataset& val) const {
    (void)options;
    (void)train;
    (void)val;
  }
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

  /// An epoch's figures, each 0, in results.csv's order: train/<term> per loss term,
  /// metric_keys(), val/<term>, lr/pg0-2 (Ultralytics' label_loss_items, metrics.keys, lr).
  EpochMetrics epoch_metrics() const;

  /// train_batchN.jpg: a training batch with its labels.
  virtual void plot_training_batch(plots::PlotWriter& writer, const data::Batch& batch,
                                   const std::vector<std::string>& names, const std::filesystem::path& dir) const = 0;
  /// What a final validation draws (curves, confusion matrix).
  virtual void plot_validation(plots::PlotWriter& writer, const ValidationReport& report,
                               const std::filesystem::path& dir) const = 0;
};

/// The head's loss options with the run's recipe: 8.4's STAL in the assigner for compat=8.4.
loss::DetectionLossOptions recipe_loss_options(const nn::DetectionModel& model, const TrainConfig& cfg);
/// The loss gains of the run's box, cls and dfl arguments.
loss::LossGains loss_gains(const TrainConfig& cfg);

/// Ultralytics' box metric keys with `suffix` "B" (DetMetrics.keys) or "M" (SegmentMetrics' mask
/// keys): metrics/precision(B), metrics/recall(B), metrics/mAP50(B), metrics/mAP50-95(B).
std::vector<std::string> box_metric_keys(const std::string& suffix);
/// Sets the epoch's metrics/*(suffix) figures from `metrics` (P, R, mAP50, mAP50-95).
void set_box_figures(EpochMetrics& m, const metrics::DetMetrics& metrics, const std::string& suffix);
/// Sets the epoch's val/<term> figures from the report's mean validation loss (nothing without).
void set_validation_losses(EpochMetrics& m, const std::vector<std::string>& terms, const ValidationReport& report);

/// The task `model`'s head trains for, with the run's loss gains and recipe (compat=): detection
/// for a Detect head (YOLOv8 / YOLO11 / YOLO26), segmentation for a Segment head.
std::unique_ptr<Task> make_task(const nn::DetectionModel& model, const TrainConfig& cfg);

/// Throws ConfigError, in one line, when `data` (given as data=`data_arg`) holds labels no task of
/// this build trains or validates: a pose dataset's keypoints (kpt_shape), which read as polygons
/// would give an error per label file (or, for an even count, wrong boxes: Ultralytics' detect
/// trainer has no such guard).
void require_known_labels(const data::DataConfig& data, const std::string& data_arg);
std::unique_ptr<Task> make_detection_task(const nn::DetectionModel& model, const TrainConfig& cfg);
std::unique_ptr<Task> make_segmentation_task(const nn::DetectionModel& model, const TrainConfig& cfg);

}  // namespace yolotrain::engine
