#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <utility>
#include <vector>

#include "yolotrain/loss/task_aligned_assigner.hpp"

namespace yolotrain::nn {
class DetectionModel;
}  // namespace yolotrain::nn

namespace yolotrain::loss {

/// Ground truth of a batch, in Ultralytics' batch fields (N = boxes in the whole batch).
struct Targets {
  at::Tensor batch_idx;  ///< [N] image index of each box (any number type)
  at::Tensor cls;        ///< [N, 1] (or [N]) class of each box
  at::Tensor bboxes;     ///< [N, 4] normalized xywh (0..1 of the network input size)
  /// Optional: the same boxes per image, [B, M, 5] (class, normalized xywh; rows of zeros after
  /// each image's boxes), as data::Batch::targets. The device step reads these (no host read);
  /// their classes are not checked against nc (the loader checked them against the dataset's).
  at::Tensor padded;
};

/// Weights of the three loss terms (Ultralytics' hyperparameters box, cls, dfl).
struct LossGains {
  double box = 7.5;
  double cls = 0.5;
  double dfl = 1.5;
};

/// What the loss needs to know of the model's head.
struct DetectionLossOptions {
  std::vector<double> strides = {8.0, 16.0, 32.0};  ///< per output level, in pixels
  int64_t nc = 80;                                  ///< number of classes
  int64_t reg_max = 16;                             ///< DFL bins per box side; 1: no DFL (YOLO26)
  int64_t tal_topk = 10;                            ///< the assigner's topk (v8 loss: 10)
  int64_t tal_topk2 = 0;                            ///< 8.4's second top-k (E2ELoss one-to-one: 1)
  bool stal = false;  ///< 8.4's small-target candidates (TaskAlignedAssigner::with_stal(strides))
  /// The step CUDA runs, on any device (the CPU's step profile): the targets padded (Targets::
  /// padded), the assigner's dense tensors, every term over all anchors weighted by the foreground
  /// — static shapes, nothing read on the host. CUDA always runs it; on the CPU, false takes the
  /// faster sparse assigner and computes the terms on the positives only.
  bool device_step = false;
  /// Each class's weight in the class term, [nc] (Ultralytics 8.4's class_weights from `cls_pw`:
  /// the BCE of class c times weight c, before the division by the target scores' sum); undefined:
  /// every class 1. class_weights_for() makes them from a training set's class counts.
  at::Tensor class_weights{};

  /// `model`'s head: its strides, nc, reg_max and class weights, topk 10, no topk2, no STAL.
  static DetectionLossOptions of(const nn::DetectionModel& model);
  /// A copy with the assigner's topk and topk2 replaced (an end-to-end head's branches).
  DetectionLossOptions with_topk(int64_t topk, int64_t topk2) const {
    DetectionLossOptions o = *this;
    o.tal_topk = topk;
    o.tal_topk2 = topk2;
    return o;
  }
};

/// The result of DetectionLoss.
struct LossOutput {
  at::Tensor total;  ///< scalar, items.sum() * batch_size, with gradient
  at::Tensor items;  ///< [3] detached: box * gain.box, cls * gain.cls, dfl * gain.dfl (or l1)
};

/// The detection terms of a batch and the assignment behind them: what a task's own terms build on
/// (the segmentation loss's mask term reads the positives and their boxes).
struct DetectionTerms {
  at::Tensor loss;        ///< [3] box * gain.box, cls * gain.cls, dfl (or l1) * gain.dfl, with gradient
  Assignment assignment;  ///< the assigner's result (its tensors undefined when the batch has no boxes)
  at::Tensor imgsz;       ///< (h, w) of the network input, pixels
  int64_t gt_rows = 0;    ///< M: the targets' rows per image (padded), the assignment's GT slots
};

/// The YOLOv8 detection loss, as Ultralytics 8.2.82's v8DetectionLoss: TaskAlignedAssigner
/// (topk 10, alpha 0.5, beta 6) on pixel boxes, BCE over all anchors and classes, CIoU and DFL on
/// the positives in grid units of each level, each divided by max(sum of target scores, 1).
/// Ultralytics 8.4's additions: STAL and topk2 in the assigner (options), and with reg_max 1 (no
/// DFL: YOLO26) an L1 term in the DFL's place — the positives' ltrb distances times their stride
/// over the image width (l, r) or height (t, b), mean over the sides, weighted like the DFL
/// (results.csv's l1_loss), with the dfl gain.
class DetectionLoss {
 public:
  /// Throws yolotrain::Error on an empty stride list, nc < 1 or reg_max < 1.
  explicit DetectionLoss(DetectionLossOptions options, LossGains gains = {});
  /// The loss of `model`'s head (its strides, nc and reg_max; topk 10): Ultralytics'
  /// v8DetectionLoss(model). `DetectionLoss loss(model)` is the reference loss.
  explicit DetectionLoss(const nn::DetectionModel& model, LossGains gains = {});

  /// feats: the model's raw outputs per level, [B, 4*reg_max + nc, H_i, W_i] (levels in stride
  /// order). targets: the batch's boxes. Throws yolotrain::Error when shapes disagree or a
  /// target's image index or class is out of range.
  LossOutput operator()(const std::vector<at::Tensor>& feats, const Targets& targets) const;
  /// The same terms, not summed, with the assignment (Ultralytics' get_assigned_targets_and_loss).
  DetectionTerms terms(const std::vector<at::Tensor>& feats, const Targets& targets) const;

  const DetectionLossOptions& options() const { return options_; }
  const LossGains& gains() const { return gains_; }
  const TaskAlignedAssigner& assigner() const { return assigner_; }
  /// Whether a step on `outputs`' device takes the device step (options().device_step, or CUDA):
  /// what a task's own terms follow to keep the step free of host reads.
  bool uses_device_step(const at::Tensor& outputs) const {
    return options_.device_step || !outputs.device().is_cpu();
  }

  /// Ultralytics' preprocess: targets to [B, M, 5] (cls, x1, y1, x2, y2 in pixels of an image
  /// of size `imgsz_hw`), each image's rows in their original order, padded with zeros to the
  /// largest count M (with Targets::padded: its M, and nothing read on the host).
  at::Tensor preprocess(const Targets& targets, int64_t batch_size, const at::Tensor& imgsz_hw) const;

  /// DFL expectation (none with reg_max 1) then dist2bbox: pred_dist [B, A, 4*reg_max] -> xyxy
  /// [B, A, 4] (grid units).
  at::Tensor bbox_decode(const at::Tensor& anchor_points, const at::Tensor& pred_dist) const;

 private:
  void check_feats(const std::vector<at::Tensor>& feats) const;
  /// terms() of the device step (DetectionLossOptions::device_step): src/loss/dense_terms.cpp.
  DetectionTerms dense_terms(const std::vector<at::Tensor>& feats, const at::Tensor& gt) const;
  /// What the levels' sizes fix: nn::make_anchors(feats, strides, 0.5) detached, and the network
  /// input's (h, w) in pixels — made once per sizes, device and dtype, so that a step of the same
  /// shapes makes no operator and copies nothing from the host.
  struct Geometry {
    at::Tensor points, strides, imgsz;
    at::Tensor unit_boxes;  ///< [A, 4] xyxy: a box of side 1 (grid units) around each anchor point
  };
  Geometry geometry(const std::vector<at::Tensor>& feats) const;

  DetectionLossOptions options_;
  LossGains gains_;
  TaskAlignedAssigner assigner_;
  struct AnchorCache;
  std::shared_ptr<AnchorCache> anchor_cache_;
};

/// Ultralytics 8.4's DetectionTrainer.set_class_weights: per class (1 / count) ^ `power` (a class
/// with no instance counted as 1), divided by their mean; float32 [nc] on the CPU. Undefined when
/// `power` is 0 or nothing is counted (every class then weighs 1). Throws yolotrain::Error when
/// `power` is outside [0, 1].
at::Tensor class_weights_for(const std::vector<int64_t>& class_counts, double power);

/// Distribution focal loss (Ultralytics' DFLoss): pred_dist [4 * P, reg_max] logits (P anchors,
/// sides l, t, r, b) against target distances [P, 4] in bins, clamped to [0, reg_max - 1.01];
/// cross-entropy to the two neighbouring bins weighted by distance, mean over the sides -> [P, 1].
at::Tensor df_loss(const at::Tensor& pred_dist, const at::Tensor& target, int64_t reg_max);

}  // namespace yolotrain::loss
