// Ultralytics 8.4.117 utils/loss.py v8SegmentationLoss (loss, single_mask_loss,
// calculate_segmentation_loss), BCEDiceLoss / MultiChannelDiceLoss (smooth 1), E2ELoss with it,
// and utils/ops.py crop_mask.
#include "yolotrain/loss/segmentation_loss.hpp"

#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::loss {
namespace {

std::string sizes_of(const at::Tensor& t) { return t.defined() ? c10::str(t.sizes()) : std::string("(undefined)"); }


// MultiChannelDiceLoss(smooth=1): 1 - (2 |p t| + 1) / (|p| + |t| + 1) per channel, mean over
// channels, then over the batch.
at::Tensor dice_loss(const at::Tensor& logits, const at::Tensor& target) {
  const at::Tensor p = logits.sigmoid();
  const at::Tensor intersection = (p * target).sum({2, 3});
  const at::Tensor uni = p.sum({2, 3}) + target.sum({2, 3});
  return (1.0 - (2.0 * intersection + 1.0) / (uni + 1.0)).mean(1).mean();
}

// BCEDiceLoss(0.5, 0.5): the target nearest-resized to the logits first.
at::Tensor bce_dice_loss(const at::Tensor& logits, at::Tensor target) {
  if (target.size(2) != logits.size(2) || target.size(3) != logits.size(3)) {
    target = at::upsample_nearest2d(target, {logits.size(2), logits.size(3)});
  }
  return 0.5 * at::binary_cross_entropy_with_logits(logits, target) + 0.5 * dice_loss(logits, target);
}

void check(const SegmentationOutputs& out, const MaskTargets& masks, bool overlap) {
  const int64_t b = out.feats.empty() ? 0 : out.feats[0].size(0);
  if (!out.mask_coefficients.defined() || out.mask_coefficients.dim() != 3 || out.mask_coefficients.size(0) != b ||
      !out.proto.defined() || out.proto.dim() != 4 || out.proto.size(0) != b ||
      out.proto.size(1) != out.mask_coefficients.size(1)) {
    throw Error("SegmentationLoss: mask coefficients " + sizes_of(out.mask_coefficients) + " and prototypes " +
                sizes_of(out.proto) + " disagree with a batch of " + std::to_string(b) +
                "; expected [B, nm, A] and [B, nm, h, w] (a Segment head's HeadOutputs)");
  }
  if (!masks.masks.defined() || masks.masks.dim() != 3 || (overlap && masks.masks.size(0) != b)) {
    throw Error("SegmentationLoss: masks " + sizes_of(masks.masks) + "; expected " +
                (overlap ? "[B, h, w] index masks (overlap)" : "[N, h, w], one per box"));
  }
}

}  // namespace

at::Tensor crop_mask(const at::Tensor& masks, const at::Tensor& boxes) {
  const int64_t h = masks.size(1), w = masks.size(2);
  const auto parts = boxes.unsqueeze(2).chunk(4, 1);  // each [N, 1, 1]
  const at::Tensor r = at::arange(w, boxes.options()).view({1, 1, w});
  const at::Tensor c = at::arange(h, boxes.options()).view({1, h, 1});
  return masks * ((r >= parts[0]) * (r < parts[2])) * ((c >= parts[1]) * (c < parts[3]));
}

SegmentationLoss::SegmentationLoss(DetectionLossOptions options, LossGains gains, bool overlap)
    : detection_(std::move(options), gains), overlap_(overlap) {}

LossOutput SegmentationLoss::operator()(const SegmentationOutputs& out, const Targets& targets,
                                        const MaskTargets& masks) const {
  check(out, masks, overlap_);
  const DetectionTerms det = detection_.terms(out.feats, targets);
  const MaskTerms m = detection_.uses_device_step(out.proto) ? device_terms(det, out, targets, masks)
                                                             : positives_terms(det, out, targets, masks);
  const at::Tensor items = at::stack({det.loss[0], m.seg * detection_.gains().box, det.loss[1], det.loss[2], m.sem});
  return {items.sum() * out.feats[0].size(0), items.detach()};
}

SegmentationLoss::MaskTerms SegmentationLoss::positives_terms(const DetectionTerms& det, const SegmentationOutputs& out,
                                                              const Targets& targets, const MaskTargets& masks) const {
  const at::Tensor zero = at::zeros({}, det.loss.options());
  MaskTerms m{zero, zero};
  if (det.assignment.fg_mask.defined() && det.assignment.fg_mask.any().item<bool>()) {
    m.seg = mask_term(det, out, targets, masks.masks.to(out.proto.device()).to(at::kFloat));
    if (out.semantic.defined()) m.sem = semantic_term(out, targets, masks) * detection_.gains().box;
  } else {  // Ultralytics keeps the graph (DDP's unused-gradient check): zeros times the outputs
    m.seg = (out.proto * 0).sum() + (out.mask_coefficients * 0).sum();
    if (out.semantic.defined()) m.sem = (out.semantic * 0).sum();
  }
  return m;
}

// Without a positive the mask term is 0 (its terms all weigh 0), and the semantic term too: a
// device-side factor instead of the host's branch.
SegmentationLoss::MaskTerms SegmentationLoss::device_terms(const DetectionTerms& det, const SegmentationOutputs& out,
                                                           const Targets& targets, const MaskTargets& masks) const {
  MaskTerms m{dense_mask_term(det, out, targets, masks.masks.to(out.proto.device()).to(at::kFloat)),
              at::zeros({}, det.loss.options())};
  if (out.semantic.defined()) {
    const at::Tensor any = det.assignment.fg_mask.any().to(m.sem.scalar_type());
    m.sem = semantic_term(out, targets, masks) * detection_.gains().box * any;
  }
  return m;
}

at::Tensor SegmentationLoss::prototypes_at(const at::Tensor& proto, const at::Tensor& masks) {
  const int64_t mh = masks.size(1), mw = masks.size(2);
  if (proto.size(2) == mh && proto.size(3) == mw) return proto;
  return at::upsample_bilinear2d(proto, {mh, mw}, /*align_corners=*/false);
}

at::Tensor SegmentationLoss::mask_term(const DetectionTerms& det, const SegmentationOutputs& out,
                                       const Targets& targets, at::Tensor masks) const {
  const at::Tensor proto = prototypes_at(out.proto, masks);
  const int64_t mh = masks.size(1), mw = masks.size(2);
  const Assignment& a = det.assignment;
  const at::Tensor wh = det.imgsz.flip(0).repeat({2});  // w, h, w, h
  const at::Tensor normalized = a.target_bboxes / wh;                             // [B, A, 4]
  const at::Tensor area = (normalized.select(2, 2) - normalized.select(2, 0)) *   // xyxy2xywh's w * h
                          (normalized.select(2, 3) - normalized.select(2, 1));
  const at::Tensor mxyxy = normalized * at::tensor({mw, mh, mw, mh}, normalized.options());
  const at::Tensor coefficients = out.mask_coefficients.permute({0, 2, 1});    // [B, A, nm]
  const at::Tensor batch_idx = targets.batch_idx.reshape({-1}).to(at::kLong);
  at::Tensor loss = at::zeros({}, proto.options());
  for (int64_t i = 0; i < proto.size(0); ++i) {
    const at::Tensor fg = a.fg_mask[i];
    if (!fg.any().item<bool>()) {
      loss = loss + (proto * 0).sum() + (coefficients * 0).sum();
      continue;
    }
    const at::Tensor idx = a.target_gt_idx[i].index({fg});
    const at::Tensor gt = overlap_ ? (masks[i] == (idx + 1).view({-1, 1, 1}).to(masks.scalar_type())).to(at::kFloat)
                                   : masks.index({batch_idx == i}).index({idx});
    const at::Tensor pred = coefficients[i].index({fg}).matmul(proto[i].flatten(1)).view({-1, mh, mw});
    const at::Tensor bce = at::binary_cross_entropy_with_logits(pred, gt, {}, {}, at::Reduction::None);
    loss = loss + (crop_mask(bce, mxyxy[i].index({fg})).mean({1, 2}) / area[i].index({fg})).sum();
  }
  return loss / a.fg_mask.sum();
}

at::Tensor SegmentationLoss::semantic_term(const SegmentationOutputs& out, const Targets& targets,
                                           const MaskTargets& masks) const {
  if (!masks.semantic.defined()) {
    throw Error("SegmentationLoss: the head gives semantic logits (YOLO26-seg) but MaskTargets::semantic is unset");
  }
  const at::Tensor m = masks.masks.to(out.proto.device());
  const int64_t b = out.proto.size(0);
  at::Tensor present;
  if (overlap_) {
    present = m != 0;
  } else {  // a pixel some box of the image covers
    const at::Tensor image = targets.batch_idx.reshape({-1}).to(m.device()).to(at::kLong);
    present = at::zeros({b, m.size(1), m.size(2)}, m.options()).index_add_(0, image, m) != 0;
  }
  const at::Tensor index = masks.semantic.to(out.proto.device()).to(at::kLong).unsqueeze(1);
  const at::Tensor onehot = at::zeros({b, detection_.options().nc, m.size(1), m.size(2)}, out.semantic.options())
                                .scatter_(1, index, present.unsqueeze(1).to(out.semantic.scalar_type()));
  return bce_dice_loss(out.semantic, onehot);
}

E2ESegmentationLoss::E2ESegmentationLoss(DetectionLossOptions options, LossGains gains, bool overlap,
                                         std::int64_t epochs)
    : one2many_(options.with_topk(10, 0), gains, overlap),
      one2one_(options.with_topk(7, 1), gains, overlap),
      epochs_(epochs),
      weights_(E2EWeights::at_epoch(0, epochs)) {
  if (epochs < 1) throw Error("E2ESegmentationLoss: epochs must be at least 1, got " + std::to_string(epochs));
}

LossOutput E2ESegmentationLoss::operator()(const SegmentationOutputs& one2many, const SegmentationOutputs& one2one,
                                           const Targets& targets, const MaskTargets& masks) const {
  SegmentationOutputs o2o = one2one;  // 8.4: the one-to-one branch reads the prototypes detached
  o2o.proto = o2o.proto.detach();
  if (o2o.semantic.defined()) o2o.semantic = o2o.semantic.detach();
  const LossOutput m = one2many_(one2many, targets, masks);
  const LossOutput o = one2one_(o2o, targets, masks);
  return {m.total * weights_.o2m + o.total * weights_.o2o, o.items};
}

}  // namespace yolotrain::loss
