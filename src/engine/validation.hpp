#pragma once

#include <torch/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/engine/validate.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/metrics/validator.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/plots/plot_writer.hpp"

namespace yolotrain::engine {

/// One validation pass over a loader (as Ultralytics' DetectionValidator): eval mode, NMS at
/// conf 0.001 (an OBB model: 0.01, as Ultralytics' BaseValidator) with multi-label, statistics on
/// the original image sizes, and the loss on the raw outputs when a criterion is given. A
/// segmentation model is validated as Ultralytics' SegmentationValidator does: each detection's
/// mask from its coefficients and the prototypes (process_mask, at the prototypes' resolution),
/// matched with the label masks by mask IoU.
struct ValidationPass {
  nn::DetectionModel net;
  data::Loader* loader = nullptr;
  /// The validation loss of a batch's raw outputs, one value per loss term; empty: no loss.
  std::function<at::Tensor(const nn::HeadOutputs&, const data::Batch&)> criterion;
  torch::Device device{torch::kCPU};
  c10::MemoryFormat memory_format = c10::MemoryFormat::Contiguous;
  double iou = 0.7;
  std::int64_t max_det = 300;
  bool agnostic = false;
  const lifecycle::ControlToken* token = nullptr;  ///< a stop ends the pass
  plots::PlotWriter* plots = nullptr;  ///< set: val_batch0..2 _labels/_pred.jpg go to plot_dir
  std::filesystem::path plot_dir;
  /// Whose validation rules the metrics follow (rules_for(compat=)).
  metrics::UltralyticsRules rules = metrics::UltralyticsRules::V84;
  /// A segmentation model (a Segment head; the loader gives masks): whether they are index masks.
  bool overlap_mask = true;
  /// A pose model (a Pose head; the loader gives keypoints): the OKS sigmas, one per keypoint (the
  /// data YAML's kpt_oks_sigmas); empty: loss::oks_sigmas()'s default for the head's kpt_shape.
  std::vector<double> oks_sigmas;
};

/// A batch's labels as the losses take them, on `device`.
loss::Targets batch_targets(const data::Batch& b, torch::Device device);

/// Throws ConfigError unless every box of `set` has its polygon (Ultralytics: "Segment dataset
/// requires equal numbers of boxes and segments"); `data` names the dataset in the message.
void require_polygons(const data::Dataset& set, const std::string& data);

/// Throws ConfigError unless every box of `set` has its outline (an OBB label's corners, or a
/// polygon): an OBB model reads each box as its outline's minimum-area rectangle.
void require_corners(const data::Dataset& set, const std::string& data);

/// The metrics' rules for compat= ("8.3" or "8.4").
metrics::UltralyticsRules rules_for(const std::string& compat);

/// The pass's batches from the start: each one's head outputs (eval mode is the caller's) given to
/// `visit`, the criterion's items summed into `report.loss`, then averaged over the batches. False
/// when a stop was requested before the last batch (the report is then not a validation).
bool for_each_batch(ValidationPass& pass, ValidationReport& report,
                    const std::function<void(const nn::HeadOutputs&, const data::Batch&)>& visit);

/// Runs the pass; nothing when a stop was requested before it finished.
std::optional<ValidationReport> run_validation(ValidationPass pass);

/// Runs a classification model's pass (ClassificationValidator: top-1 / top-5, the confusion
/// matrix; the criterion on HeadOutputs::logits); nothing when a stop was requested before it finished.
std::optional<ValidationReport> run_classify_validation(ValidationPass pass);

/// Queues what Ultralytics' validator draws after a pass into `dir`: confusion_matrix.png,
/// confusion_matrix_normalized.png (and the counts as confusion_matrix.csv), PR_curve.png,
/// F1_curve.png, P_curve.png, R_curve.png (a segmentation model's: BoxPR_curve.png, ... and
/// MaskPR_curve.png, ..., as SegmentMetrics names them).
void plot_validation_results(plots::PlotWriter& writer, const ValidationReport& report,
                             const std::filesystem::path& dir);

}  // namespace yolotrain::engine
