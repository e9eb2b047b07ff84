#pragma once
// What is specific to a task (detection, segmentation, pose, classification, oriented boxes) or to a model family's
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
  /// The validation loader's batch over the training loader's: Ultralytics validates at twice the
  /// batch, OBB at the batch itself (BaseTrainer._build_train_pipeline, 8.3 and 8.4).
  virtual int val_batch_factor() const { return 2; }
  /// Why this task's training step cannot be captured as a CUDA graph ("" when it can: its loss
  /// has the device step, static shapes and no host read; cuda_graph=, graphed_step.hpp).
  virtual std::string graph_blocker() const {
    return "only the detection and segmentation losses have a step without host reads";
  }
  /// What the run says once the task is made (a pose dataset without flip_idx: flips off).
  virtual std::vector<std::string> setup_warnings() const { return {}; }
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

  /// Whether the run draws labels.jpg from the training labels (Ultralytics' DetectionTrainer and
  /// those built on it do; its ClassificationTrainer does not).
  virtual bool plots_labels() const { return true; }
  /// train_batchN.jpg: a training batch with its labels (and its keypoints); by default
  /// plots::plot_training_batch.
  virtual void plot_training_batch(plots::PlotWriter& writer, const data::Batch& batch,
                                   const std::vector<std::string>& names, const std::filesystem::path& dir) const;
  /// What a final validation draws (curves of each metric set, confusion matrix); by default
  /// plot_validation_results.
  virtual void plot_validation(plots::PlotWriter& writer, const ValidationReport& report,
                               const std::filesystem::path& dir) const;
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
/// A boxes-only task's fill_validation (detection, OBB): the box figures, the validation losses and
/// DetMetrics' fitness.
void fill_box_validation(EpochMetrics& m, const std::vector<std::string>& terms, const ValidationReport& report);
/// Sets the epoch's val/<term> figures from the report's mean validation loss (nothing without).
void set_validation_losses(EpochMetrics& m, const std::vector<std::string>& terms, const ValidationReport& report);

/// The task `model`'s head trains for, with the run's loss gains and recipe (compat=) and the
/// dataset's config (a pose dataset's flip_idx and kpt_oks_sigmas): detection for a Detect head
/// (YOLOv8 / YOLO11 / YOLO26), segmentation for a Segment head, pose for a Pose head,
/// classification for a Classify head, oriented boxes for an OBB head.
std::unique_ptr<Task> make_task(const nn::DetectionModel& model, const TrainConfig& cfg,
                                const data::DataConfig& data = {});

/// Throws ConfigError, in one line, when a model of `task` ("detect", "segment", "pose", "classify") cannot
/// use the labels of `data` (given as data=`data_arg`): a pose dataset's keypoints for a detection
/// or segmentation model (Ultralytics' detect trainer would read them as odd polygons and skip
/// every label), a dataset without kpt_shape for a pose model (Ultralytics' PoseTrainer: "No
/// `kpt_shape` in the data").
void require_task_labels(const std::string& task, const data::DataConfig& data, const std::string& data_arg);
/// A pose dataset's kpt_shape as a pose model takes it (Ultralytics' PoseModel data_kpt_shape:
/// DetectionModelOptions::kpt_shape); empty for other datasets (the model YAML's then stands).
std::vector<std::int64_t> kpt_shape_of(const data::DataConfig& data);
std::unique_ptr<Task> make_detection_task(const nn::DetectionModel& model, const TrainConfig& cfg);
std::unique_ptr<Task> make_segmentation_task(const nn::DetectionModel& model, const TrainConfig& cfg);
std::unique_ptr<Task> make_obb_task(const nn::DetectionModel& model, const TrainConfig& cfg);
std::unique_ptr<Task> make_classify_task(const nn::DetectionModel& model, const TrainConfig& cfg);
std::unique_ptr<Task> make_pose_task(const nn::DetectionModel& model, const TrainConfig& cfg,
                                     const data::DataConfig& data);

}  // namespace yolotrain::engine
