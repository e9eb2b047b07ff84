#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/metrics/classify_metrics.hpp"
#include "yolotrain/metrics/confusion_matrix.hpp"
#include "yolotrain/metrics/det_metrics.hpp"

namespace yolotrain::engine {

/// The figures of one validation pass, as Ultralytics' DetectionValidator reports them.
struct ValidationReport {
  metrics::DetMetrics metrics;
  /// A segmentation model's mask metrics (Ultralytics' "(M)" figures); empty for detection.
  std::optional<metrics::DetMetrics> mask_metrics;
  /// A pose model's keypoint metrics, matched by OKS (Ultralytics' "(P)" figures); empty otherwise.
  std::optional<metrics::DetMetrics> pose_metrics;
  /// A classification model's figures (top-1, top-5 accuracy); `metrics` then stays empty and
  /// metric_sets() has none.
  std::optional<metrics::ClassifyMetrics> classify;
  /// The metric sets of the report with their titles, in Ultralytics' order: "Box" then "Mask" or
  /// "Pose" when the task has them (the table's column groups, the curves' file prefixes).
  std::vector<std::pair<std::string, const metrics::DetMetrics*>> metric_sets() const;
  std::vector<std::string> names;            ///< class names
  std::int64_t images = 0;                   ///< images validated
  std::vector<std::int64_t> instances_per_class;  ///< labelled boxes per class
  std::vector<std::int64_t> images_per_class;     ///< images holding the class
  /// The mean validation loss per term (box, cls, dfl; a segmentation model's box, seg, cls, dfl,
  /// sem); empty when not computed.
  std::vector<double> loss;
  double seconds = 0;                        ///< wall time of the pass
  /// Ultralytics' confusion matrix of the pass (conf 0.25, IoU 0.45, a background row and column).
  std::optional<metrics::ConfusionMatrix> confusion;
  /// validate() with plots: the folder its pictures went to (empty otherwise).
  std::filesystem::path save_dir;
  /// validate() with plots: the pictures that could not be written ("<file> not written: ...").
  std::vector<std::string> plot_warnings;
  /// Ultralytics' table: the header, the "all" row and, with `per_class`, one row per class
  /// seen in the labels; a segmentation model's has the Mask(P R mAP50 mAP50-95) columns too, a
  /// pose model's the Pose(P R mAP50 mAP50-95) ones; a classification model's is
  /// ClassificationValidator's (classes, top1_acc, top5_acc; the "all" row).
  std::string table(bool per_class = true) const;
};

/// `yolo_train val`: validates weights on a dataset and returns the report. `cfg.model` is a
/// yolo_train checkpoint (`.ytckpt`: its EMA weights) or a `.safetensors` file with Ultralytics'
/// names (the scale and nc are read from the tensor shapes); `cfg.data` names the dataset (its
/// `val` split, else `train`); `imgsz`, `batch`, `iou`, `max_det`, `single_cls`, `device`,
/// `workers` and `threads` apply. With `plots`, it writes what Ultralytics' validator draws into
/// project/name (name2, ... unless exist_ok; val_config() makes the name `val`): val_batch0-2
/// labels and predictions, the confusion matrix (picture, normalized picture, CSV) and the PR, F1,
/// P and R curves; a picture that cannot be written is a warning in the report. A stop requested on `token` ends the
/// pass early with an Error. Throws ConfigError for a missing file, weights that do not fit, or a bad dataset.
ValidationReport validate(const TrainConfig& cfg, const lifecycle::ControlToken* token = nullptr);

/// The arguments `yolo_train val` uses: those stored in a checkpoint (`model=*.ytckpt`) or an
/// Ultralytics `.pt`, so that it validates as the run did, but `name=val` and `exist_ok=false` (as
/// Ultralytics' val mode: its pictures go to runs/detect/val, val2, ...), then `args` on top.
TrainConfig val_config(const std::vector<std::string>& args);

}  // namespace yolotrain::engine
