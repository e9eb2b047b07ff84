#pragma once
// Ultralytics 8.4's classification figures (utils/metrics.py ClassifyMetrics; models/yolo/classify/
// val.py ClassificationValidator): top-1 and top-5 accuracy over the validated images.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "yolotrain/metrics/confusion_matrix.hpp"

namespace yolotrain::metrics {

/// A classification validation's figures.
struct ClassifyMetrics {
  double top1 = 0;  ///< the share of images whose most probable class is theirs
  double top5 = 0;  ///< the share whose class is among the min(nc, 5) most probable
  /// Ultralytics' ClassifyMetrics.fitness: (top1 + top5) / 2.
  double fitness() const { return (top1 + top5) / 2; }
};

/// Accumulates a classification validation batch by batch, as ClassificationValidator does: the
/// min(nc, 5) classes of highest probability per image (argsort, descending) against its class, and
/// the confusion matrix of the top-1 class (ConfusionMatrix::classification).
class ClassifyValidator {
 public:
  explicit ClassifyValidator(std::int64_t nc);
  /// One batch: `probs` [B, nc] (or logits: only their order counts), `targets` [B] class indices.
  void update(const at::Tensor& probs, const at::Tensor& targets);
  ClassifyMetrics finalize() const;
  std::int64_t seen() const { return seen_; }
  /// Validated images per class.
  const std::vector<std::int64_t>& images_per_class() const { return per_class_; }
  const ConfusionMatrix& confusion() const { return confusion_; }

 private:
  std::int64_t nc_, seen_ = 0, top1_ = 0, top5_ = 0;
  std::vector<std::int64_t> per_class_;
  ConfusionMatrix confusion_;
};

}  // namespace yolotrain::metrics
