// SegmentationLoss' mask term in the device step (DetectionLoss::uses_device_step): the terms of
// Ultralytics 8.4's calculate_segmentation_loss with static shapes. Each image's positives are at
// most topk per GT slot, so the anchors taken per image are its top K = min(A, topk * M) by the
// foreground mask (M: the padded GT rows): every positive, then background anchors weighted 0.
// Their masks are one batched matmul; a background anchor's target is a real mask, its box may be
// empty (crop_mask makes it 0) and its area is taken as 1, so its zero-weighted term is finite.
// Nothing is read on the host and no shape depends on the data; the figures are the positives'
// path's (segmentation_loss.cpp) up to the order of the float sums.
#include <ATen/record_function.h>

#include <algorithm>

#include "yolotrain/loss/segmentation_loss.hpp"

namespace yolotrain::loss {
namespace {

// [B, K] of [B, A, ...] -> [B, K, ...]: the rows `sel` of each image.
at::Tensor rows_of(const at::Tensor& t, const at::Tensor& sel) {
  if (t.dim() == 2) return t.gather(1, sel);
  return t.gather(1, sel.unsqueeze(-1).expand({-1, -1, t.size(2)}));
}

// The GT masks [B, K, h, w] of the anchors' GT slots `idx` [B, K]. overlap: masks [B, h, w] hold
// 1-based slots. Otherwise masks [N, h, w] are one per box, the images' boxes one after another in
// batch_idx's order: image i's slot j is row (boxes of images before i) + j.
at::Tensor gt_masks(const at::Tensor& masks, const at::Tensor& idx, const Targets& targets, bool overlap) {
  const int64_t b = idx.size(0), k = idx.size(1), h = masks.size(-2), w = masks.size(-1);
  if (overlap) return (masks.unsqueeze(1) == (idx + 1).view({b, k, 1, 1}).to(masks.scalar_type())).to(at::kFloat);
  if (masks.size(0) == 0) return at::zeros({b, k, h, w}, masks.options());
  const at::Tensor image = targets.batch_idx.reshape({-1}).to(idx.device()).to(at::kLong);
  const at::Tensor counts = at::zeros({b}, idx.options()).index_add_(0, image, at::ones_like(image));
  const at::Tensor first = (counts.cumsum(0) - counts).unsqueeze(1);  // [B, 1]
  const at::Tensor rows = (first + idx).clamp(0, masks.size(0) - 1);  // background slots: any real row
  return masks.index_select(0, rows.reshape({-1})).view({b, k, h, w});
}

}  // namespace

at::Tensor SegmentationLoss::dense_mask_term(const DetectionTerms& det, const SegmentationOutputs& out,
                                             const Targets& targets, at::Tensor masks) const {
  RECORD_FUNCTION("yolotrain::loss::dense_mask_term", std::vector<c10::IValue>());
  const at::Tensor proto = prototypes_at(out.proto, masks);
  const int64_t mh = masks.size(1), mw = masks.size(2);
  const Assignment& a = det.assignment;
  const int64_t b = proto.size(0), anchors = a.fg_mask.size(1);
  const int64_t k = std::max<int64_t>(1, std::min(anchors, detection_.options().tal_topk * det.gt_rows));
  const at::Tensor fg = a.fg_mask.to(proto.scalar_type());
  const at::Tensor sel = std::get<1>(fg.topk(k, 1, /*largest=*/true, /*sorted=*/false));  // [B, K]: every positive
  const at::Tensor weight = rows_of(fg, sel);                                                // 1 positive, 0 background

  const at::Tensor wh = det.imgsz.flip(0).repeat({2});                           // w, h, w, h
  const at::Tensor normalized = rows_of(a.target_bboxes, sel) / wh;                 // [B, K, 4]
  const at::Tensor area = (normalized.select(2, 2) - normalized.select(2, 0)) *  // xyxy2xywh's w * h
                          (normalized.select(2, 3) - normalized.select(2, 1));
  const at::Tensor safe_area = at::where(weight > 0, area, at::ones_like(area));
  const at::Tensor corners = normalized.view({b, k, 2, 2});  // (x, y) of each corner: to mask pixels
  const at::Tensor mxyxy = at::stack({corners.select(3, 0) * mw, corners.select(3, 1) * mh}, 3).view({b, k, 4});

  const at::Tensor coefficients = rows_of(out.mask_coefficients.permute({0, 2, 1}), sel);  // [B, K, nm]
  const at::Tensor pred = coefficients.bmm(proto.flatten(2)).view({b, k, mh, mw});
  const at::Tensor gt = gt_masks(masks, rows_of(a.target_gt_idx, sel), targets, overlap_);
  const at::Tensor bce = at::binary_cross_entropy_with_logits(pred, gt, {}, {}, at::Reduction::None);
  const at::Tensor cropped = crop_mask(bce.view({b * k, mh, mw}), mxyxy.view({b * k, 4})).mean({1, 2});
  const at::Tensor loss = (cropped.view({b, k}) / safe_area * weight).sum();
  return loss / at::clamp_min(a.fg_mask.sum(), 1);
}

}  // namespace yolotrain::loss
