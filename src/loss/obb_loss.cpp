// Ultralytics 8.4.117 utils/loss.py v8OBBLoss (preprocess, loss, bbox_decode, calculate_angle_loss),
// RotatedBboxLoss and E2ELoss(model, v8OBBLoss); 8.3.58's v8OBBLoss and RotatedBboxLoss for compat=8.3.
#include "yolotrain/loss/obb_loss.hpp"

#include <c10/core/GradMode.h>

#include <cmath>
#include <string>

#include "head_parts.hpp"
#include "loss_inputs.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/loss/rotated_box_ops.hpp"
#include "yolotrain/nn/anchors.hpp"

namespace yolotrain::loss {

using detail::shape_text;

OBBLoss::OBBLoss(DetectionLossOptions options, LossGains gains, OBBLossOptions obb)
    : options_(std::move(options)),
      gains_(gains),
      obb_(obb),
      assigner_(options_.tal_topk, std::max<int64_t>(options_.nc, 1), 0.5, 6.0),
      proj_(at::arange(options_.reg_max, at::kFloat)) {
  if (options_.strides.empty() || options_.nc < 1 || options_.reg_max < 1)
    throw Error("OBBLoss: needs at least one stride, nc >= 1 and reg_max >= 1");
  assigner_.with_rotated().with_topk2(options_.tal_topk2);
  if (options_.stal) assigner_.with_stal(options_.strides);
}

at::Tensor OBBLoss::preprocess(const Targets& targets, int64_t batch_size, const at::Tensor& imgsz_hw) const {
  const auto options = imgsz_hw.options();
  at::Tensor t = detail::target_rows(targets, batch_size, options_.nc, options, 5,
                                     "normalized xywh and the angle: an OBB dataset's boxes, data::LoaderOptions::obb",
                                     "OBBLoss");
  const double h = imgsz_hw[0].item<double>(), w = imgsz_hw[1].item<double>();
  t = t.index({(t.select(1, 4) * w >= 2).logical_and_(t.select(1, 5) * h >= 2)});  // tiny boxes out
  if (t.size(0) == 0) return at::zeros({batch_size, 0, 6}, options);
  at::Tensor packed = t.slice(1, 1).clone();
  packed.slice(1, 1, 5).mul_(imgsz_hw.flip(0).repeat({2}));  // x, y, w, h in pixels
  return detail::pack_per_image(packed, t.select(1, 0).to(at::kLong), batch_size);
}

LossOutput OBBLoss::operator()(const OBBOutputs& out, const Targets& targets) const {
  detail::check_level_outputs(out.feats, options_, "OBBLoss");
  const int64_t b = out.feats[0].size(0), nc = options_.nc, reg_max = options_.reg_max;
  const detail::LevelParts parts = detail::split_levels(out.feats, nc, reg_max);
  const at::Tensor pred_distri = detail::anchors_last(parts.distri), pred_scores = detail::anchors_last(parts.logits);
  const int64_t anchors_n = pred_scores.size(1);
  if (!out.angle.defined() || out.angle.dim() != 3 || out.angle.size(0) != b || out.angle.size(1) != 1 ||
      out.angle.size(2) != anchors_n) {
    throw Error("OBBLoss: angle " + shape_text(out.angle) + "; expected [" + std::to_string(b) + ", 1, " +
                std::to_string(anchors_n) + "] (an OBB head's HeadOutputs::angle)");
  }
  const at::Tensor pred_angle = out.angle.permute({0, 2, 1}).contiguous();
  auto [anchors, strides] = nn::make_anchors(out.feats, options_.strides, 0.5);
  const auto opts = pred_scores.options();
  const at::Tensor imgsz = at::tensor({out.feats[0].size(2), out.feats[0].size(3)}, at::kDouble)
                               .mul(options_.strides[0]).to(opts);
  const at::Tensor gt = preprocess(targets, b, imgsz);
  const at::Tensor gt_labels = gt.slice(2, 0, 1), gt_bboxes = gt.slice(2, 1, 6);
  const at::Tensor mask_gt = (gt_bboxes.sum(2, true) > 0).to(gt.scalar_type());

  at::Tensor dist = pred_distri;  // bbox_decode: the DFL expectation, dist2rbox, the angle appended
  if (reg_max > 1)
    dist = pred_distri.view({b, anchors_n, 4, reg_max}).softmax(3).matmul(proj_.to(pred_distri.options()));
  const at::Tensor pred_bboxes = at::cat({nn::dist2rbox(dist, pred_angle, anchors, -1), pred_angle}, -1);
  at::Tensor for_assigner = pred_bboxes.detach().clone();
  for_assigner.slice(-1, 0, 4).mul_(strides);
  const Assignment a = assigner_(pred_scores.detach().sigmoid(), for_assigner.to(gt.scalar_type()),
                                 anchors * strides, gt_labels, gt_bboxes, mask_gt);
  const at::Tensor target_scores_sum = a.target_scores.sum().clamp_min(1);
  const at::Tensor cls = at::binary_cross_entropy_with_logits(pred_scores, a.target_scores.to(opts),
                                                              detail::class_weights(options_, pred_scores), {},
                                                              at::Reduction::None)
                             .sum() /
                         target_scores_sum;
  at::Tensor terms = box_terms(pred_distri, pred_bboxes, anchors, strides, a, target_scores_sum, imgsz);
  std::vector<at::Tensor> items = {terms[0] * gains_.box, cls * gains_.cls, terms[1] * gains_.dfl};
  if (obb_.v84) items.push_back(terms[2] * obb_.angle);
  const at::Tensor all = at::stack(items);
  return {all.sum() * b, all.detach()};
}

// RotatedBboxLoss (1 - ProbIoU; DFL or 8.4's L1) and 8.4's angle term on the positives: [3] (box, dfl,
// angle); without a positive the box term is 0 joined to the angle's graph, as Ultralytics' (pred_angle * 0).
at::Tensor OBBLoss::box_terms(const at::Tensor& pred_dist, const at::Tensor& pred_bboxes, const at::Tensor& anchors,
                              const at::Tensor& strides, const Assignment& a, const at::Tensor& target_scores_sum,
                              const at::Tensor& imgsz) const {
  const at::Tensor& fg = a.fg_mask;
  if (!fg.defined() || !fg.any().item<bool>()) {
    const at::Tensor zero = (pred_bboxes.select(-1, 4) * 0).sum();
    return at::stack({zero, zero.detach(), zero.detach()});
  }
  at::Tensor target = a.target_bboxes.clone();
  target.slice(-1, 0, 4).div_(strides);  // grid units
  const at::Tensor weight = a.target_scores.index({fg}).sum(-1, true);
  const at::Tensor pred_fg = pred_bboxes.index({fg}), target_fg = target.index({fg});
  const at::Tensor iou = probiou(pred_fg, target_fg, false, 1e-7, obb_.v84 ? 0.01 : 0.0);
  const at::Tensor box = ((1.0 - iou) * weight).sum() / target_scores_sum;
  const int64_t reg_max = options_.reg_max;
  const at::Tensor xywh = target.slice(-1, 0, 4), angle = target.slice(-1, 4, 5);
  at::Tensor dfl;
  if (reg_max > 1) {
    const at::Tensor ltrb = obb_.v84 ? rbox2dist(xywh, anchors, angle, static_cast<double>(reg_max - 1))
                                     : nn::bbox2dist(anchors, xywh2xyxy(xywh), static_cast<double>(reg_max - 1));
    dfl = (df_loss(pred_dist.index({fg}).view({-1, reg_max}), ltrb.index({fg}), reg_max) * weight).sum() /
          target_scores_sum;
  } else {
    const at::Tensor fg_strides = strides.view({1, -1, 1}).expand({fg.size(0), -1, 1}).index({fg});
    const at::Tensor ltrb = rbox2dist(xywh, anchors, angle).index({fg});
    dfl = (detail::l1_term(pred_dist.index({fg}), ltrb, fg_strides, imgsz) * weight).sum() / target_scores_sum;
  }
  at::Tensor angle_term = box.detach() * 0;
  if (obb_.v84) {  // calculate_angle_loss, lambda 3
    const at::Tensor log_ar = at::log((target_fg.select(-1, 2) + 1e-9) / (target_fg.select(-1, 3) + 1e-9));
    const at::Tensor scale = at::exp(-log_ar.pow(2) / 9.0);
    const at::Tensor delta = pred_fg.select(-1, 4) - target_fg.select(-1, 4);
    const at::Tensor wrapped = delta - at::round(delta / M_PI) * M_PI;
    angle_term = (scale * at::sin(2 * wrapped).pow(2) * weight.squeeze(-1)).sum() / target_scores_sum;
  }
  return at::stack({box, dfl, angle_term});
}

E2EOBBLoss::E2EOBBLoss(DetectionLossOptions options, LossGains gains, OBBLossOptions obb, std::int64_t epochs)
    : one2many_(options.with_topk(10, 0), gains, obb),
      one2one_(options.with_topk(7, 1), gains, obb),
      epochs_(epochs),
      weights_(E2EWeights::at_epoch(0, epochs)) {
  if (epochs < 1) throw Error("E2EOBBLoss: epochs must be at least 1, got " + std::to_string(epochs));
}

LossOutput E2EOBBLoss::operator()(const OBBOutputs& one2many, const OBBOutputs& one2one,
                                  const Targets& targets) const {
  const LossOutput m = one2many_(one2many, targets);
  const LossOutput o = one2one_(one2one, targets);
  return {m.total * weights_.o2m + o.total * weights_.o2o, o.items};
}

}  // namespace yolotrain::loss
