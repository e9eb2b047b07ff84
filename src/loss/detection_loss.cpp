#include "yolotrain/loss/detection_loss.hpp"

#include <ATen/record_function.h>
#include <ATen/core/grad_mode.h>

#include <mutex>
#include <string>

#include "class_term.hpp"
#include "head_parts.hpp"
#include "loss_inputs.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/nn/anchors.hpp"

namespace yolotrain::loss {

using detail::anchors_last;
using detail::l1_term;
using detail::LevelParts;
using detail::split_levels;

namespace {

using at::indexing::Slice;

}  // namespace

at::Tensor df_loss(const at::Tensor& pred_dist, const at::Tensor& target_in, int64_t reg_max) {
  const at::Tensor target = target_in.clamp(0, reg_max - 1 - 0.01);
  const at::Tensor tl = target.to(at::kLong);  // target left
  const at::Tensor tr = tl + 1;                // target right
  const at::Tensor wl = tr - target;           // weight left
  const at::Tensor wr = 1 - wl;                // weight right
  const auto none = at::Reduction::None;
  return (at::cross_entropy_loss(pred_dist, tl.view(-1), {}, none).view(tl.sizes()) * wl +
          at::cross_entropy_loss(pred_dist, tr.view(-1), {}, none).view(tl.sizes()) * wr)
      .mean(-1, true);
}

// The last anchors made, and what they were made for.
struct DetectionLoss::AnchorCache {
  std::mutex mutex;
  std::vector<int64_t> sizes;  // H, W of each level
  at::Device device{at::kCPU};
  at::ScalarType dtype = at::kFloat;
  DetectionLoss::Geometry geometry;
};

DetectionLoss::DetectionLoss(DetectionLossOptions options, LossGains gains)
    : options_(std::move(options)),
      gains_(gains),
      assigner_(options_.tal_topk, std::max<int64_t>(options_.nc, 1), 0.5, 6.0),
      anchor_cache_(std::make_shared<AnchorCache>()) {
  if (options_.strides.empty() || options_.nc < 1 || options_.reg_max < 1) {
    throw Error("DetectionLoss: needs at least one stride, nc >= 1 and reg_max >= 1 (got " +
                std::to_string(options_.strides.size()) + " strides, nc " +
                std::to_string(options_.nc) + ", reg_max " + std::to_string(options_.reg_max) + ")");
  }
  assigner_.with_topk2(options_.tal_topk2).with_static_shapes(true);  // dense() is the device step's
  if (options_.stal) assigner_.with_stal(options_.strides);
}

void DetectionLoss::check_feats(const std::vector<at::Tensor>& feats) const {
  detail::check_level_outputs(feats, options_, "DetectionLoss");
}

at::Tensor DetectionLoss::preprocess(const Targets& targets, int64_t batch_size,
                                     const at::Tensor& imgsz_hw) const {
  const auto options = imgsz_hw.options();
  const at::Tensor scale = imgsz_hw.flip(0).repeat({2});  // w, h, w, h (on its device: no host copy)
  if (targets.padded.defined()) {  // [B, M, 5] already: scaled to pixels, xyxy
    if (targets.padded.dim() != 3 || targets.padded.size(0) != batch_size || targets.padded.size(2) != 5) {
      throw Error("DetectionLoss: targets.padded has shape " + detail::shape_text(targets.padded) + "; expected [" +
                  std::to_string(batch_size) + ", M, 5] (class, normalized xywh per image)");
    }
    const at::Tensor p = targets.padded.to(options);
    return at::cat({p.slice(2, 0, 1), xywh2xyxy(p.slice(2, 1, 5) * scale)}, 2);
  }
  const at::Tensor t =
      detail::target_rows(targets, batch_size, options_.nc, options, 4, "normalized xywh", "DetectionLoss");
  if (t.size(0) == 0) return at::zeros({batch_size, 0, 5}, options);
  const at::Tensor i = t.select(1, 0);
  const at::Tensor counts = std::get<2>(at::_unique2(i, true, false, true));
  at::Tensor out = at::zeros({batch_size, counts.max().item<int64_t>(), 5}, options);
  for (int64_t j = 0; j < batch_size; ++j) {
    const at::Tensor matches = i == j;
    const int64_t n = matches.sum().item<int64_t>();
    if (n) out.select(0, j).slice(0, 0, n).copy_(t.index({matches}).slice(1, 1));
  }
  at::Tensor xywh = out.slice(2, 1, 5);
  xywh.mul_(scale);
  xywh.copy_(xywh2xyxy(xywh));
  return out;
}

DetectionLoss::Geometry DetectionLoss::geometry(const std::vector<at::Tensor>& feats) const {
  std::vector<int64_t> sizes;
  for (const at::Tensor& f : feats) sizes.insert(sizes.end(), {f.size(2), f.size(3)});
  AnchorCache& c = *anchor_cache_;
  std::lock_guard<std::mutex> lock(c.mutex);
  const at::Device device = feats[0].device();
  if (!c.geometry.points.defined() || c.sizes != sizes || c.device != device || c.dtype != feats[0].scalar_type()) {
    auto [points, strides] = nn::make_anchors(feats, options_.strides, 0.5);
    c.sizes = sizes;
    c.device = device;
    c.dtype = feats[0].scalar_type();
    const at::TensorOptions options = feats[0].options().requires_grad(false);
    c.geometry = {points.detach(), strides.detach(),
                  at::tensor({feats[0].size(2), feats[0].size(3)}, options) * options_.strides[0],  // (h, w) px
                  at::cat({points - 0.5, points + 0.5}, 1).detach()};
  }
  return c.geometry;
}

at::Tensor DetectionLoss::bbox_decode(const at::Tensor& anchor_points,
                                      const at::Tensor& pred_dist) const {
  if (options_.reg_max == 1) return nn::dist2bbox(pred_dist, anchor_points, false);
  const int64_t b = pred_dist.size(0), a = pred_dist.size(1), c = pred_dist.size(2);
  const at::Tensor proj = at::arange(options_.reg_max, pred_dist.options().requires_grad(false));
  const at::Tensor dist = pred_dist.view({b, a, 4, c / 4}).softmax(3).matmul(proj);
  return nn::dist2bbox(dist, anchor_points, false);
}

namespace {

// The positives' (image, anchor, class) and target score: the only non-zero target scores.
struct Positives {
  at::Tensor image, anchor, cls, score;
};

Positives positives_of(const Assignment& a) {
  const at::Tensor idx = a.fg_mask.nonzero();  // [n, 2] (image, anchor)
  Positives p{idx.select(1, 0), idx.select(1, 1), {}, {}};
  p.cls = a.target_labels.index({p.image, p.anchor});
  p.score = a.anchor_scores.index({p.image, p.anchor});
  return p;
}

// The class loss over every level, without gathering the logits into one tensor; `pos` null: no
// boxes, t = 0; `weights`: DetectionLossOptions::class_weights.
at::Tensor class_loss(const std::vector<at::Tensor>& logits, const Positives* pos, const at::Tensor& weights) {
  RECORD_FUNCTION("yolotrain::loss::class_loss", std::vector<c10::IValue>());
  at::Tensor total;
  int64_t offset = 0;
  const at::Tensor none = at::empty({0}, at::kLong);
  for (const at::Tensor& x : logits) {
    const int64_t hw = x.size(2) * x.size(3);
    at::Tensor term;
    if (pos) {
      const at::Tensor here = (pos->anchor >= offset) & (pos->anchor < offset + hw);
      term = detail::class_term(x, pos->image.index({here}), pos->cls.index({here}), pos->anchor.index({here}) - offset,
                                pos->score.index({here}).to(x.scalar_type()), weights);
    } else {
      term = detail::class_term(x, none, none, none, at::empty({0}, x.options().requires_grad(false)), weights);
    }
    total = total.defined() ? total + term : term;
    offset += hw;
  }
  return total;
}

// What BboxLoss needs of the positives (fg: [B, A] mask), all in grid units.
struct BoxInputs {
  at::Tensor pred_distri;    // [B, A, 4 * reg_max] with gradient
  at::Tensor anchors;        // [A, 2]
  at::Tensor strides;        // [A, 1]
  at::Tensor target_bboxes;  // [B, A, 4] xyxy
  at::Tensor anchor_scores;  // [B, A]
  at::Tensor tss;            // max(sum of target scores, 1)
  at::Tensor fg;             // [B, A] bool
  at::Tensor imgsz;          // (h, w) px
};

// Ultralytics' BboxLoss: (CIoU term, DFL or L1 term) over the positive anchors, in grid units.
// Only the positive anchors' distributions are decoded (with gradient): the others add nothing.
std::pair<at::Tensor, at::Tensor> bbox_loss(const DetectionLoss& loss, const BoxInputs& in, int64_t reg_max) {
  RECORD_FUNCTION("yolotrain::loss::bbox_loss", std::vector<c10::IValue>());
  const at::Tensor& fg = in.fg;
  const at::Tensor weight = in.anchor_scores.index({fg}).unsqueeze(-1);
  const at::Tensor fg_distri = in.pred_distri.index({fg});                                // [n, 4 * reg_max]
  const at::Tensor fg_anchors = in.anchors.expand({fg.size(0), -1, -1}).index({fg});     // [n, 2]
  const at::Tensor fg_boxes = loss.bbox_decode(fg_anchors.unsqueeze(0), fg_distri.unsqueeze(0)).squeeze(0);
  const at::Tensor fg_targets = in.target_bboxes.index({fg});
  const at::Tensor iou = bbox_iou(fg_boxes, fg_targets, false, IouKind::CIoU);
  const at::Tensor loss_iou = ((1.0 - iou) * weight).sum() / in.tss;
  if (reg_max == 1) {
    const at::Tensor ltrb =
        at::cat({fg_anchors - fg_targets.slice(1, 0, 2), fg_targets.slice(1, 2, 4) - fg_anchors}, 1);
    const at::Tensor fg_strides = in.strides.expand({fg.size(0), -1, -1}).index({fg});  // [n, 1]
    return {loss_iou, (l1_term(fg_distri, ltrb, fg_strides, in.imgsz) * weight).sum() / in.tss};
  }
  const at::Tensor target_ltrb = nn::bbox2dist(fg_anchors, fg_targets, static_cast<double>(reg_max - 1));
  const at::Tensor dfl = df_loss(fg_distri.view({-1, reg_max}), target_ltrb, reg_max);
  return {loss_iou, (dfl * weight).sum() / in.tss};
}

}  // namespace

LossOutput DetectionLoss::operator()(const std::vector<at::Tensor>& feats,
                                     const Targets& targets) const {
  const DetectionTerms t = terms(feats, targets);
  return {t.loss.sum() * feats[0].size(0), t.loss.detach()};
}

DetectionTerms DetectionLoss::terms(const std::vector<at::Tensor>& feats, const Targets& targets) const {
  check_feats(feats);
  if (uses_device_step(feats[0])) {
    return dense_terms(feats, preprocess(targets, feats[0].size(0), geometry(feats).imgsz));
  }
  const int64_t batch_size = feats[0].size(0);
  const LevelParts parts = split_levels(feats, options_.nc, options_.reg_max);
  const at::TensorOptions options = feats[0].options().requires_grad(false);
  DetectionTerms out;
  const Geometry g = geometry(feats);
  out.imgsz = g.imgsz;  // (h, w) px
  const at::Tensor &anchors = g.points, &strides = g.strides;

  Targets unpadded = targets;  // the reference's M: the sparse path equals it to the bit
  unpadded.padded = at::Tensor();
  const at::Tensor gt = preprocess(unpadded, batch_size, out.imgsz);
  out.gt_rows = gt.size(1);
  at::Tensor loss_box = at::zeros({}, options), loss_dfl = loss_box, loss_cls;
  if (gt.size(1) == 0) {  // no boxes in the batch: every target score is 0, tss = max(0, 1)
    loss_cls = class_loss(parts.logits, nullptr, options_.class_weights);
  } else {
    const at::Tensor gt_labels = gt.slice(2, 0, 1), gt_bboxes = gt.slice(2, 1, 5);
    const at::Tensor mask_gt = gt_bboxes.sum(2, true).gt_(0);
    const at::Tensor pred_distri = anchors_last(parts.distri);  // [B, A, 4 * reg_max]
    Assignment& a = out.assignment;
    {
      RECORD_FUNCTION("yolotrain::loss::assign", std::vector<c10::IValue>());
      at::NoGradGuard no_grad;
      const at::Tensor pred_bboxes = bbox_decode(anchors, pred_distri);  // xyxy, grid units
      a = assigner_(anchors_last(parts.logits).sigmoid_(), (pred_bboxes * strides).to(gt_bboxes.scalar_type()),
                    anchors * strides, gt_labels, gt_bboxes, mask_gt, /*dense_scores=*/false);
    }
    const at::Tensor tss = at::clamp_min(a.anchor_scores.sum(), 1);  // max(sum of target_scores, 1)
    const Positives pos = positives_of(a);
    loss_cls = class_loss(parts.logits, &pos, options_.class_weights) / tss;
    if (a.fg_mask.any().item<bool>()) {
      const BoxInputs in{pred_distri,     anchors, strides,   a.target_bboxes / strides,
                         a.anchor_scores, tss,     a.fg_mask, out.imgsz};
      std::tie(loss_box, loss_dfl) = bbox_loss(*this, in, options_.reg_max);
    }
  }
  out.loss = at::stack({loss_box * gains_.box, loss_cls * gains_.cls, loss_dfl * gains_.dfl});
  return out;
}

}  // namespace yolotrain::loss
