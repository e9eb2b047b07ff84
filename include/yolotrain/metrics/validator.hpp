#pragma once

#include <ATen/ATen.h>

#include <array>
#include <functional>
#include <optional>
#include <vector>

#include "yolotrain/metrics/boxes.hpp"
#include "yolotrain/metrics/confusion_matrix.hpp"
#include "yolotrain/metrics/det_metrics.hpp"
#include "yolotrain/metrics/ultralytics_rules.hpp"

namespace yolotrain::metrics {

/// Where one validation image came from: its original (h, w) and its letterbox gain/padding
/// (without ratio_pad the letterbox is recomputed from the shapes, as scale_boxes does).
struct ImageInfo {
  std::array<int64_t, 2> ori_shape = {0, 0};
  std::optional<RatioPad> ratio_pad;
};

/// Accumulates validation statistics image by image, as Ultralytics' DetectionValidator
/// (update_metrics / get_stats): predictions and labels are put in one space (UltralyticsRules),
/// matched greedily at IoU 0.5:0.95, and finalize() computes the metrics.
class Validator {
 public:
  /// `nc` sizes nt_per_class() and the confusion matrix; 0 means "as many as seen" and no matrix.
  explicit Validator(int64_t nc = 0, UltralyticsRules rules = UltralyticsRules::V83);

  /// One image. pred [n, 6] post-NMS rows (x1, y1, x2, y2, conf, cls) in pixels of the network
  /// input of size imgsz (h, w); gt_cls [m] (or [m, 1]); gt_bboxes [m, 4] normalized xywh.
  /// Segmentation (Ultralytics' SegmentationValidator): also the predictions' masks [n, h, w]
  /// (0/1, process_mask) and the labels' [m, h, w] (label_masks), matched by mask IoU for the
  /// mask metrics (finalize_masks()); both or neither, for every image.
  void update(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_bboxes,
              std::array<int64_t, 2> imgsz, const ImageInfo& info, const at::Tensor& pred_masks = {},
              const at::Tensor& gt_masks = {});
  /// Pose (Ultralytics' PoseValidator): one image with its predictions' keypoints [n, k, 3] (pixels
  /// of the network input) and the labels' [m, k, 3] (normalized x y, visibility), matched by OKS
  /// (keypoint_oks with `sigmas` [k], area = the label box's w * h * 0.53) for the second metrics
  /// (finalize_masks(): the "(P)" figures). Under the 8.3 rules both go to the original image.
  void update_keypoints(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_bboxes,
                        std::array<int64_t, 2> imgsz, const ImageInfo& info, const at::Tensor& pred_keypoints,
                        const at::Tensor& gt_keypoints, const at::Tensor& sigmas);

  /// Oriented boxes (Ultralytics' OBBValidator): pred [n, 7] post-NMS rows (x, y, w, h, conf, cls,
  /// angle) in pixels of the network input; gt_rboxes [m, 5] normalized x y w h (x, w over the width;
  /// y, h over the height) and angle. Matched by ProbIoU (batch_probiou) in the network input (8.4's
  /// rules) or, under the 8.3 rules, both mapped to the original image first (scale_boxes with xywh).
  void update_rotated(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_rboxes,
                      std::array<int64_t, 2> imgsz, const ImageInfo& info);

  /// A batch: preds[i] for image i (as non_max_suppression() returns them), the batch's target
  /// fields (batch_idx [N], cls [N, 1], normalized xywh bboxes [N, 4]) and one ImageInfo per
  /// image. Throws yolotrain::Error when counts disagree.
  void update(const std::vector<at::Tensor>& preds, const at::Tensor& batch_idx,
              const at::Tensor& cls, const at::Tensor& bboxes, std::array<int64_t, 2> imgsz,
              const std::vector<ImageInfo>& infos);

  /// The metrics of everything seen since construction or reset().
  DetMetrics finalize() const;
  /// The second metrics: the same predictions matched by mask IoU (images given with masks) or by
  /// OKS (update_keypoints()).
  DetMetrics finalize_masks() const;
  /// Accumulated second matches [N, 10] (empty without masks or keypoints).
  at::Tensor tp_masks() const;

  /// Forgets everything.
  void reset();

  /// Images seen.
  int64_t seen() const { return seen_; }
  /// Ground-truth boxes per class over the images seen.
  std::vector<int64_t> nt_per_class() const;
  /// Images holding at least one box of each class (the "Images" column of Ultralytics' table).
  std::vector<int64_t> nt_per_image() const;

  /// Accumulated statistics, concatenated: tp [N, 10] bool, conf [N], pred_cls [N],
  /// target_cls [M].
  at::Tensor tp() const;
  at::Tensor conf() const;
  at::Tensor pred_cls() const;
  at::Tensor target_cls() const;
  /// Ultralytics' confusion matrix (conf 0.25, IoU 0.45) of the images seen; null when nc is 0.
  const ConfusionMatrix* confusion_matrix() const { return confusion_ ? &*confusion_ : nullptr; }

 private:
  /// The second matching's similarity [m, n] of the labels (boxes [m, 4] in the matching space) and
  /// the predictions ([n, 6], the same space).
  using Similarity = std::function<at::Tensor(const at::Tensor& gt_boxes, const at::Tensor& predn)>;
  void update_with(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_bboxes,
                   std::array<int64_t, 2> imgsz, const ImageInfo& info, const Similarity& second);
  /// One image's matches (tp [n, 10]) and statistics: the part of an update every kind shares.
  void record(const at::Tensor& tp, const at::Tensor& predn, const at::Tensor& cls);

  int64_t nc_;
  UltralyticsRules rules_;
  int64_t seen_ = 0;
  at::Tensor iouv_;
  std::vector<at::Tensor> tp_, tp_masks_, conf_, pred_cls_, target_cls_;
  std::optional<ConfusionMatrix> confusion_;
};

}  // namespace yolotrain::metrics
