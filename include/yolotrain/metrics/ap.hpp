#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>
#include <vector>

#include "yolotrain/metrics/ultralytics_rules.hpp"

namespace yolotrain::metrics {

/// The 10 IoU thresholds of mAP50-95: torch.linspace(0.5, 0.95, 10) in float32.
at::Tensor iou_thresholds();

/// Ultralytics' greedy matching (BaseValidator.match_predictions): pred_cls [N], true_cls [M],
/// iou [M, N] (labels x detections), iouv [T] thresholds -> tp [N, T] bool. Per threshold, the
/// (label, detection) pairs with same class and IoU >= threshold are sorted by IoU descending,
/// each detection keeps its first pair, then each label keeps its lowest-index detection.
/// Ties in IoU are ordered as NumPy's argsort does for small arrays (stable ascending, then
/// reversed: the later pair in row-major order comes first).
at::Tensor match_predictions(const at::Tensor& pred_cls, const at::Tensor& true_cls,
                             const at::Tensor& iou, const at::Tensor& iouv = iou_thresholds());

/// numpy.interp(x, xp, fp, left, right) for increasing xp (duplicates allowed: an x equal to a
/// repeated xp takes the last one's ordinate). left/right default to fp's ends.
std::vector<double> interp(const std::vector<double>& x, const std::vector<double>& xp,
                           const std::vector<double>& fp, std::optional<double> left = {},
                           std::optional<double> right = {});

/// AP of one precision/recall curve as Ultralytics' compute_ap: sentinels (0, 1) and (1, 0) (8.4
/// also (last recall, 0) before the last: UltralyticsRules), precision envelope, trapezoid
/// integral of the 101-point interpolation. Returns (ap, mpre, mrec).
std::tuple<double, std::vector<double>, std::vector<double>> compute_ap(
    const std::vector<double>& recall, const std::vector<double>& precision,
    UltralyticsRules rules = UltralyticsRules::V83);

/// What ap_per_class() returns; C = classes present in the ground truth, T = thresholds.
struct ApResult {
  at::Tensor tp;             ///< [C] true positives at the chosen confidence (float64)
  at::Tensor fp;             ///< [C] false positives at the chosen confidence
  at::Tensor p;              ///< [C] precision at the max-mean-F1 confidence
  at::Tensor r;              ///< [C] recall at that confidence
  at::Tensor f1;             ///< [C] F1 at that confidence
  at::Tensor ap;             ///< [C, T] AP per class and IoU threshold
  at::Tensor unique_classes; ///< [C] int64, the classes (sorted)
  at::Tensor p_curve;        ///< [C, 1000] precision against confidence x
  at::Tensor r_curve;        ///< [C, 1000] recall against confidence x
  at::Tensor f1_curve;       ///< [C, 1000]
  at::Tensor x;              ///< [1000] confidences linspace(0, 1, 1000)
  at::Tensor prec_values;    ///< [C, 1000] precision at recall x (IoU 0.5; the PR curve)
};

/// Ultralytics' ap_per_class in float64: tp [N, T] (bool or 0/1), conf [N], pred_cls [N],
/// target_cls [M]. Detections are sorted by descending confidence, stably (the reference's
/// quicksort is not stable; stable equals it on small arrays). Prediction-only classes are
/// ignored; classes with ground truth but no predictions get zeros.
ApResult ap_per_class(const at::Tensor& tp, const at::Tensor& conf, const at::Tensor& pred_cls,
                      const at::Tensor& target_cls, double eps = 1e-16,
                      UltralyticsRules rules = UltralyticsRules::V83);

/// Ultralytics' smooth(): box filter of width round(n * f * 2) // 2 + 1 with edge padding.
std::vector<double> smooth(const std::vector<double>& y, double f = 0.05);

}  // namespace yolotrain::metrics
