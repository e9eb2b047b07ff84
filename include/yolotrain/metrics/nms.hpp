#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace yolotrain::metrics {

/// Options of non_max_suppression(); defaults are Ultralytics' function defaults (its validator
/// uses conf 0.001, iou 0.7, multi_label true; its predictor conf 0.25, iou 0.7).
struct NmsOptions {
  double conf = 0.25;          ///< keep candidates whose score is strictly above this
  double iou = 0.45;           ///< suppress boxes whose IoU with a kept box is strictly above this
  int64_t max_det = 300;       ///< at most this many rows per image
  int64_t max_nms = 30000;     ///< at most this many highest-scoring candidates enter NMS
  bool multi_label = false;    ///< one row per (box, class) above conf (only when nc > 1)
  bool agnostic = false;       ///< suppress across classes too
  std::optional<std::vector<int64_t>> classes;  ///< keep only these classes
  double max_wh = 7680.0;      ///< per-class box offset (pixels) that separates classes
  /// The predictions come from an end-to-end head ([B, k, 6] = x1 y1 x2 y2, score, class: YOLO26):
  /// no NMS, only the score threshold, `classes` and max_det, as Ultralytics 8.4 does.
  bool end2end = false;
  /// Classes among the columns after the box; the rest are extras each kept row carries after its
  /// class (a segmentation head's mask coefficients). 0: every column is a class.
  int64_t nc = 0;
  /// Oriented boxes (Ultralytics' rotated=True, an OBB head's [B, 4 + nc + 1, A]: xywh, scores, the
  /// angle last): the boxes stay xywh, and suppression is Fast NMS by ProbIoU (nms_rotated(), the
  /// class offset added to the centres); set nc so that the angle rides along as the extra column.
  /// Rows are then x, y, w, h, conf, cls, angle.
  bool rotated = false;
};

/// NMS of pred [B, 4 + nc, A] (xywh pixels, then class scores), as Ultralytics'
/// ops.non_max_suppression: returns one [n, 6] float tensor (x1, y1, x2, y2, conf, cls) per
/// image in keep order (descending score, stable); with NmsOptions::nc and extra columns
/// ([B, 4 + nc + nm, A], a Segment head), [n, 6 + nm], the extras after the class. Ultralytics'
/// wall-clock time limit is not applied. Throws yolotrain::Error on a wrong shape.
std::vector<at::Tensor> non_max_suppression(const at::Tensor& pred, const NmsOptions& opts = {});

/// What non_max_suppression() does for an end-to-end head (NmsOptions::end2end; Ultralytics 8.4's
/// nms.non_max_suppression branch for `prediction.shape[-1] == 6 or end2end`): per image the rows
/// of pred [B, k, 6] (or [B, k, 6 + nm] with mask coefficients) whose score is strictly above
/// conf (and whose class is among `classes`), in their order, at most max_det.
std::vector<at::Tensor> select_end2end(const at::Tensor& pred, const NmsOptions& opts);

/// torchvision.ops.nms on the CPU: indices (int64) of the kept boxes, highest score first;
/// boxes [n, 4] xyxy, a box is suppressed when its IoU with a kept box is > iou_threshold.
at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold);

}  // namespace yolotrain::metrics
