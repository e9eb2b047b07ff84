#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "yolotrain/metrics/ap.hpp"

namespace yolotrain::metrics {

/// Detection metrics as Ultralytics' DetMetrics / Metric (box): means over the classes present
/// in the ground truth.
struct DetMetrics {
  double mp = 0;     ///< mean precision at the max-mean-F1 confidence
  double mr = 0;     ///< mean recall at that confidence
  double map50 = 0;  ///< mean AP at IoU 0.5
  double map75 = 0;  ///< mean AP at IoU 0.75
  double map = 0;    ///< mean AP over IoU 0.5:0.95 (mAP50-95)
  double fitness = 0;  ///< 0.1 * map50 + 0.9 * map (8.4: map)

  std::vector<int64_t> ap_class_index;  ///< the classes of the per-class vectors below
  std::vector<double> p;        ///< per-class precision
  std::vector<double> r;        ///< per-class recall
  std::vector<double> f1;       ///< per-class F1
  std::vector<double> ap50;     ///< per-class AP50
  std::vector<double> ap;       ///< per-class AP50-95
  at::Tensor all_ap;            ///< [C, 10] float64 (empty when no TP at all)
  /// The curves of the plots (Ultralytics' curves_results), per class in ap_class_index order,
  /// against px = linspace(0, 1, 1000): precision at recall px (PR curve), and F1, precision and
  /// recall at confidence px. Undefined when no TP at all.
  at::Tensor px, prec_values, f1_curve, p_curve, r_curve;

  /// AP50-95 per class id 0..nc-1; classes without ground truth get `map` (Ultralytics' maps).
  std::vector<double> maps(int64_t nc) const;
  /// (mp, mr, map50, map): Ultralytics' mean_results().
  std::vector<double> mean_results() const { return {mp, mr, map50, map}; }
};

/// The metrics of accumulated statistics: tp [N, 10], conf [N], pred_cls [N], target_cls [M].
/// When no detection is a true positive at any threshold every figure stays 0 (as Ultralytics'
/// validator, which then skips ap_per_class). fitness: 0.1 mAP50 + 0.9 mAP50-95 by 8.3's rules,
/// mAP50-95 by 8.4's.
DetMetrics det_metrics(const at::Tensor& tp, const at::Tensor& conf, const at::Tensor& pred_cls,
                       const at::Tensor& target_cls, UltralyticsRules rules = UltralyticsRules::V83);

}  // namespace yolotrain::metrics
