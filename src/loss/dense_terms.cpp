// DetectionLoss' device step (DetectionLossOptions::device_step, and every CUDA run): the terms of
// Ultralytics' v8DetectionLoss with static shapes. The assigner works on the padded targets'
// [B, M, A] tensors; the class term is the BCE against the dense target scores; the box terms (CIoU,
// DFL or L1) are computed for every anchor and weighted by its target score, which is 0 off the
// foreground — so no tensor's shape depends on the data and nothing is read on the host. A
// background anchor's target box is a unit box around the anchor, so that its (zero-weighted)
// gradient is finite. The figures are the positives-only path's (detection_loss.cpp) up to the
// order of float sums.
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include "head_parts.hpp"
#include "loss_inputs.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/anchors.hpp"

namespace yolotrain::loss {
namespace {

// The box terms over all anchors: (CIoU term, DFL or L1 term), each sum(term * weight) / tss.
struct DenseBoxInputs {
  at::Tensor pred_distri;  // [B, A, 4 * reg_max] with gradient
  at::Tensor pred_boxes;   // [B, A, 4] xyxy, grid units: pred_distri decoded, with gradient
  at::Tensor anchors;      // [A, 2], grid units
  at::Tensor strides;      // [A, 1]
  at::Tensor targets;      // [B, A, 4] xyxy, grid units: the assigned box, or the unit box around the anchor
  at::Tensor weight;       // [B, A, 1] the target score (0 off the foreground)
  at::Tensor tss;          // max(sum of target scores, 1)
  at::Tensor imgsz;        // (h, w) px
};

std::pair<at::Tensor, at::Tensor> dense_box_terms(const DenseBoxInputs& in, int64_t reg_max) {
  RECORD_FUNCTION("yolotrain::loss::dense_box_terms", std::vector<c10::IValue>());
  const at::Tensor iou = bbox_iou(in.pred_boxes, in.targets, false, IouKind::CIoU);
  const at::Tensor loss_iou = ((1.0 - iou) * in.weight).sum() / in.tss;
  if (reg_max == 1) {
    const at::Tensor ltrb =
        at::cat({in.anchors - in.targets.slice(2, 0, 2), in.targets.slice(2, 2, 4) - in.anchors}, 2);
    const at::Tensor strides = in.strides.expand({in.targets.size(0), -1, -1});
    return {loss_iou, (detail::l1_term(in.pred_distri, ltrb, strides, in.imgsz) * in.weight).sum() / in.tss};
  }
  const at::Tensor target_ltrb = nn::bbox2dist(in.anchors, in.targets, static_cast<double>(reg_max - 1));
  const at::Tensor dfl = df_loss(in.pred_distri.reshape({-1, reg_max}), target_ltrb.reshape({-1, 4}), reg_max);
  return {loss_iou, (dfl.view(in.weight.sizes()) * in.weight).sum() / in.tss};
}

}  // namespace

DetectionTerms DetectionLoss::dense_terms(const std::vector<at::Tensor>& feats, const at::Tensor& gt) const {
  const detail::LevelParts parts = detail::split_levels(feats, options_.nc, options_.reg_max);
  DetectionTerms out;
  const Geometry g = geometry(feats);
  out.imgsz = g.imgsz;  // (h, w) px
  out.gt_rows = gt.size(1);
  const at::Tensor &anchors = g.points, &strides = g.strides;
  const at::Tensor gt_labels = gt.slice(2, 0, 1), gt_bboxes = gt.slice(2, 1, 5);
  const at::Tensor mask_gt = gt_bboxes.sum(2, true).gt_(0);
  const at::Tensor pred_distri = detail::anchors_last(parts.distri);  // [B, A, 4 * reg_max]
  const at::Tensor logits = detail::anchors_last(parts.logits);       // [B, A, nc]
  const at::Tensor pred_bboxes = bbox_decode(anchors, pred_distri);   // xyxy, grid units, with gradient
  Assignment& a = out.assignment;
  {
    RECORD_FUNCTION("yolotrain::loss::assign", std::vector<c10::IValue>());
    at::NoGradGuard no_grad;
    a = assigner_.dense(logits.detach().sigmoid(), (pred_bboxes.detach() * strides).to(gt_bboxes.scalar_type()),
                        anchors * strides, gt_labels, gt_bboxes, mask_gt);
  }
  const at::Tensor tss = at::clamp_min(a.anchor_scores.sum(), 1);  // max(sum of target_scores, 1)
  const at::Tensor loss_cls = at::binary_cross_entropy_with_logits(logits, a.target_scores.to(logits.scalar_type()),
                                                                   detail::class_weights(options_, logits), {},
                                                                   at::Reduction::Sum) /
                              tss;
  const at::Tensor fg = a.fg_mask.unsqueeze(-1);
  const DenseBoxInputs in{pred_distri,
                          pred_bboxes,
                          anchors,
                          strides,
                          at::where(fg, a.target_bboxes / strides, g.unit_boxes),  // background: harmless
                          a.anchor_scores.unsqueeze(-1),
                          tss,
                          out.imgsz};
  const auto [loss_box, loss_dfl] = dense_box_terms(in, options_.reg_max);
  out.loss = at::stack({loss_box * gains_.box, loss_cls * gains_.cls, loss_dfl * gains_.dfl});
  return out;
}

}  // namespace yolotrain::loss
