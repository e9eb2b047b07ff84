#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/loss/e2e_loss.hpp"

namespace yolotrain::loss {

/// A segmentation head's outputs for one branch (nn::HeadOutputs' fields).
struct SegmentationOutputs {
  std::vector<at::Tensor> feats;  ///< raw per level [B, 4*reg_max + nc, H_i, W_i]
  at::Tensor mask_coefficients;   ///< [B, nm, A]
  at::Tensor proto;               ///< [B, nm, h, w]
  at::Tensor semantic;            ///< [B, nc, H3, W3] (YOLO26-seg in training), else undefined
};

/// The batch's masks (Ultralytics' batch["masks"], batch["sem_masks"]), at the mask resolution
/// (the input size over mask_ratio; data::polygons_to_overlap_mask builds them).
struct MaskTargets {
  /// overlap: [B, h, w], per pixel the 1-based index of the image's instance covering it (its
  /// boxes in that order), 0 background; otherwise [N, h, w] 0/1, one per box of the batch.
  at::Tensor masks;
  /// [B, h, w] class per pixel, for the semantic term; may be undefined without a semantic head.
  at::Tensor semantic;
};

/// Ultralytics 8.4's v8SegmentationLoss: the v8 detection loss (DetectionLoss, its options and
/// gains) plus the mask term — for each positive anchor, the mask from its coefficients and the
/// image's prototypes (bilinearly resized to the masks when they differ) against its GT's mask:
/// BCE with logits, kept inside the GT box (crop_mask), mean over the mask, divided by the box's
/// normalized area, summed, over the positives' count, times gains.box — and, when the head gives
/// semantic logits (YOLO26-seg), the semantic term: 0.5 BCE + 0.5 Dice (smooth 1) against the
/// one-hot classes of the pixels some instance covers (nearest-resized to the logits), times
/// gains.box. Both are 0 (with the graph kept) when no anchor is positive.
class SegmentationLoss {
 public:
  /// `overlap`: the masks are per-image index masks (Ultralytics' overlap_mask, default true).
  SegmentationLoss(DetectionLossOptions options, LossGains gains = {}, bool overlap = true);

  /// total = items.sum() * B with gradient; items [5]: box, seg, cls, dfl (l1 for reg_max 1), sem
  /// (Ultralytics 8.4's loss_names order). Throws yolotrain::Error naming a shape that disagrees.
  LossOutput operator()(const SegmentationOutputs& outputs, const Targets& targets, const MaskTargets& masks) const;

  const DetectionLoss& detection() const { return detection_; }
  bool overlap() const { return overlap_; }

 private:
  /// The mask term (before its gain) and the semantic term (with it), 0 without a positive: on the
  /// positives (the CPU's path), or in the device step (static shapes, no host read).
  struct MaskTerms {
    at::Tensor seg, sem;
  };
  MaskTerms positives_terms(const DetectionTerms& det, const SegmentationOutputs& out, const Targets& targets,
                            const MaskTargets& masks) const;
  MaskTerms device_terms(const DetectionTerms& det, const SegmentationOutputs& out, const Targets& targets,
                         const MaskTargets& masks) const;
  at::Tensor mask_term(const DetectionTerms& det, const SegmentationOutputs& out, const Targets& targets,
                       at::Tensor masks) const;
  /// The mask term in the device step: src/loss/dense_mask_term.cpp.
  at::Tensor dense_mask_term(const DetectionTerms& det, const SegmentationOutputs& out, const Targets& targets,
                             at::Tensor masks) const;
  /// The prototypes [B, nm, h, w] at the masks' size (bilinear, as Ultralytics) where they differ.
  static at::Tensor prototypes_at(const at::Tensor& proto, const at::Tensor& masks);
  at::Tensor semantic_term(const SegmentationOutputs& out, const Targets& targets, const MaskTargets& masks) const;

  DetectionLoss detection_;
  bool overlap_;
};

/// Ultralytics 8.4's E2ELoss(model, v8SegmentationLoss) for YOLO26-seg: the segmentation loss of the
/// one-to-many branch (topk 10) and of the one-to-one branch (topk 7, topk2 1; its prototypes and
/// semantic logits detached), weighted by E2EWeights at the epoch; items are the one-to-one's.
class E2ESegmentationLoss {
 public:
  E2ESegmentationLoss(DetectionLossOptions options, LossGains gains, bool overlap, std::int64_t epochs);
  void set_epoch(std::int64_t epoch) { weights_ = E2EWeights::at_epoch(epoch, epochs_); }
  const E2EWeights& weights() const { return weights_; }
  LossOutput operator()(const SegmentationOutputs& one2many, const SegmentationOutputs& one2one,
                        const Targets& targets, const MaskTargets& masks) const;
  const SegmentationLoss& one2many() const { return one2many_; }
  const SegmentationLoss& one2one() const { return one2one_; }

 private:
  SegmentationLoss one2many_;
  SegmentationLoss one2one_;
  std::int64_t epochs_;
  E2EWeights weights_;
};

/// Ultralytics' crop_mask: zeroes each mask [N, h, w] outside its box [N, 4] (xyxy in mask pixels:
/// columns x1 <= c < x2, rows y1 <= r < y2).
at::Tensor crop_mask(const at::Tensor& masks, const at::Tensor& boxes);

}  // namespace yolotrain::loss
