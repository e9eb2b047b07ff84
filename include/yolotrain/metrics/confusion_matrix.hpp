#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace yolotrain::metrics {

/// Ultralytics 8.2's detection ConfusionMatrix (utils/metrics.py): an (nc + 1) x (nc + 1) count
/// matrix, rows the predicted class, columns the true class, the last row and column the
/// background. Per image, detections above `conf` are matched to labels at IoU > `iou_thres`
/// (each label and each detection at most once, highest IoU first, as its numpy unique/argsort
/// steps do); a label matched once counts at [detected class, true class], an unmatched label at
/// [background, true class], and — only when the image had at least one match, as 8.2 does — an
/// unmatched detection at [detected class, background]. An image without labels counts each
/// detection above `conf` at [class, background]; one without detections each label at
/// [background, class].
class ConfusionMatrix {
 public:
  /// conf 0.001 (validation's default) becomes 0.25, as Ultralytics' constructor does.
  explicit ConfusionMatrix(std::int64_t nc, double conf = 0.25, double iou_thres = 0.45);
  /// Ultralytics' classification matrix (task "classify"): nc x nc, rows the predicted (top-1)
  /// class, columns the true one, no background row or column.
  static ConfusionMatrix classification(std::int64_t nc);

  /// A classification image: its top-1 class and its true class (process_cls_preds).
  void process_class(std::int64_t predicted, std::int64_t truth);
  /// Whether the matrix is a classification one (no background).
  bool classification() const { return classification_; }
  /// Rows (and columns) of the matrix: nc for classification, else nc + 1 with the background.
  std::int64_t size() const { return classification_ ? nc_ : nc_ + 1; }

  /// One image: detections [n, 6] (x1, y1, x2, y2, conf, cls) or an undefined tensor for none;
  /// gt_bboxes [m, 4] xyxy in the same pixels; gt_cls [m]. Oriented boxes (the OBB task): gt_bboxes
  /// [m, 5] xywhr and detections [n, 7] (x, y, w, h, conf, cls, angle), overlaps by ProbIoU.
  void process_batch(const at::Tensor& detections, const at::Tensor& gt_bboxes, const at::Tensor& gt_cls);

  std::int64_t nc() const { return nc_; }
  /// The count at [predicted][true] (index nc is the background).
  double at(std::int64_t predicted, std::int64_t truth) const;
  /// Row-major (nc + 1)^2 counts.
  const std::vector<double>& counts() const { return counts_; }
  /// True and false positives per class (background excluded), as Ultralytics' tp_fp().
  std::pair<std::vector<double>, std::vector<double>> tp_fp() const;
  /// The matrix as CSV: a header `Predicted \ True,<names...>,background`, one row per predicted
  /// class and the background row; `normalize` divides each column by its sum (+1e-9), as the
  /// normalized plot shows it.
  std::string to_csv(const std::vector<std::string>& names, bool normalize = false) const;

 private:
  std::int64_t nc_;
  double conf_, iou_thres_;
  bool classification_ = false;
  std::vector<double> counts_;
  std::size_t index(std::int64_t predicted, std::int64_t truth) const;  // bounds-checked
  double& cell(std::int64_t predicted, std::int64_t truth);
};

}  // namespace yolotrain::metrics
