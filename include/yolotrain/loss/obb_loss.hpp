#pragma once
// The oriented-box loss, as Ultralytics 8.4.117's v8OBBLoss (utils/loss.py) with its
// RotatedTaskAlignedAssigner (utils/tal.py) and RotatedBboxLoss, and E2ELoss around it for YOLO26-obb;
// under compat=8.3, 8.3.58's three-term v8OBBLoss.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/loss/e2e_loss.hpp"

namespace yolotrain::loss {

/// An OBB head's outputs for one branch (nn::HeadOutputs' fields).
struct OBBOutputs {
  std::vector<at::Tensor> feats;  ///< raw per level [B, 4*reg_max + nc, H_i, W_i]
  at::Tensor angle;               ///< [B, 1, A], radians (OBB: (sigmoid - 0.25) * pi; OBB26: raw)
};

/// What the OBB loss adds to the detection loss's options.
struct OBBLossOptions {
  double angle = 1.0;  ///< 8.4's angle gain (hyperparameter `angle`)
  /// 8.4's loss (true): ProbIoU with a floor of 0.01 on the Gaussians, DFL targets along each
  /// box's own axes (rbox2dist), the angle term. 8.3 (false): ProbIoU without floor, DFL targets
  /// from the box's upright bounds (bbox2dist of xywh2xyxy, the angle ignored), no angle term.
  bool v84 = true;
};

/// Ultralytics' v8OBBLoss. Targets: normalized xywh and angle per box (Targets::bboxes [N, 5], as
/// data::Batch gives them with LoaderOptions::obb); boxes under 2 px on a side are dropped first.
/// The rotated assigner (topk, alpha 0.5, beta 6; 8.4's STAL and topk2 from the options) on pixel
/// boxes; BCE over all anchors and classes; on the positives in grid units of their level: 1 -
/// ProbIoU, and DFL (reg_max > 1) or 8.4's L1 of the rotated distances (reg_max 1, YOLO26), each
/// weighted by the target score and divided by max(sum of target scores, 1); 8.4's angle term:
/// sin^2(2 (predicted - target angle), wrapped to pi) times exp(-(log(w/h))^2 / 9), weighted alike.
/// items: box, cls, dfl (l1)[, angle] times their gains; total = items.sum() * B.
class OBBLoss {
 public:
  OBBLoss(DetectionLossOptions options, LossGains gains, OBBLossOptions obb = {});

  /// Throws yolotrain::Error naming a shape that disagrees (an angle that is not [B, 1, A], boxes
  /// that are not [N, 5]).
  LossOutput operator()(const OBBOutputs& outputs, const Targets& targets) const;

  /// The number of items: 4 (8.4) or 3 (8.3).
  int64_t items() const { return obb_.v84 ? 4 : 3; }
  const DetectionLossOptions& options() const { return options_; }
  const TaskAlignedAssigner& assigner() const { return assigner_; }

  /// v8OBBLoss.preprocess after the tiny-box filter: [B, M, 6] (class, x, y, w, h in pixels of an
  /// image of size `imgsz_hw`, angle), each image's boxes in order, zero rows after.
  at::Tensor preprocess(const Targets& targets, int64_t batch_size, const at::Tensor& imgsz_hw) const;

 private:
  at::Tensor box_terms(const at::Tensor& pred_dist, const at::Tensor& pred_bboxes, const at::Tensor& anchors,
                       const at::Tensor& strides, const Assignment& a, const at::Tensor& target_scores_sum,
                       const at::Tensor& imgsz) const;

  DetectionLossOptions options_;
  LossGains gains_;
  OBBLossOptions obb_;
  TaskAlignedAssigner assigner_;
  at::Tensor proj_;  ///< [reg_max] bins 0 .. reg_max - 1
};

/// Ultralytics 8.4's E2ELoss(model, v8OBBLoss) for YOLO26-obb: the OBB loss of the one-to-many
/// branch (topk 10) and of the one-to-one branch (topk 7, topk2 1), weighted by E2EWeights at the
/// epoch; items are the one-to-one's.
class E2EOBBLoss {
 public:
  E2EOBBLoss(DetectionLossOptions options, LossGains gains, OBBLossOptions obb, std::int64_t epochs);
  void set_epoch(std::int64_t epoch) { weights_ = E2EWeights::at_epoch(epoch, epochs_); }
  const E2EWeights& weights() const { return weights_; }
  LossOutput operator()(const OBBOutputs& one2many, const OBBOutputs& one2one, const Targets& targets) const;
  const OBBLoss& one2one() const { return one2one_; }

 private:
  OBBLoss one2many_;
  OBBLoss one2one_;
  std::int64_t epochs_;
  E2EWeights weights_;
};

}  // namespace yolotrain::loss
