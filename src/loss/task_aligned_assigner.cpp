#include "yolotrain/loss/task_aligned_assigner.hpp"

#include <ATen/core/grad_mode.h>

#include <string>
#include <utility>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/loss/rotated_box_ops.hpp"

namespace yolotrain::loss {

using at::indexing::Ellipsis;
using at::indexing::Slice;

void TaskAlignedAssigner::check_inputs(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                                       const at::Tensor& anc_points, const at::Tensor& gt_labels,
                                       const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const {
  const int64_t width = rotated_ ? 5 : 4;  // xyxy, or xywhr
  const bool ok = pd_scores.dim() == 3 && pd_bboxes.dim() == 3 && pd_bboxes.size(2) == width &&
                  pd_bboxes.size(0) == pd_scores.size(0) &&
                  pd_bboxes.size(1) == pd_scores.size(1) && anc_points.dim() == 2 &&
                  anc_points.size(0) == pd_scores.size(1) && gt_bboxes.dim() == 3 &&
                  gt_bboxes.size(2) == width && gt_bboxes.size(0) == pd_scores.size(0) &&
                  gt_labels.dim() == 3 && gt_labels.size(1) == gt_bboxes.size(1) &&
                  mask_gt.dim() == 3 && mask_gt.size(1) == gt_bboxes.size(1);
  if (!ok) {
    throw Error("TaskAlignedAssigner: inconsistent shapes pd_scores " + c10::str(pd_scores.sizes()) +
                ", pd_bboxes " + c10::str(pd_bboxes.sizes()) + ", anc_points " +
                c10::str(anc_points.sizes()) + ", gt_labels " + c10::str(gt_labels.sizes()) +
                ", gt_bboxes " + c10::str(gt_bboxes.sizes()) + ", mask_gt " +
                c10::str(mask_gt.sizes()) +
                "; expected [B,A,C], [B,A," + std::to_string(width) + "], [A,2], [B,M,1], [B,M," +
                std::to_string(width) + "], [B,M,1]");
  }
  if (gt_bboxes.size(1) > 0 && pd_scores.size(2) != num_classes_) {
    throw Error("TaskAlignedAssigner: pd_scores has " + std::to_string(pd_scores.size(2)) +
                " classes but the assigner was built for " + std::to_string(num_classes_));
  }
}

TaskAlignedAssigner::TaskAlignedAssigner(int64_t topk, int64_t num_classes, double alpha,
                                         double beta, double eps)
    : topk_(topk), num_classes_(num_classes), alpha_(alpha), beta_(beta), eps_(eps) {
  if (topk < 1 || num_classes < 1) {
    throw Error("TaskAlignedAssigner: topk (" + std::to_string(topk) + ") and num_classes (" +
                std::to_string(num_classes) + ") must be at least 1");
  }
}

TaskAlignedAssigner& TaskAlignedAssigner::with_topk2(int64_t k) {
  if (k < 0) throw Error("TaskAlignedAssigner: topk2 must be 0 (none) or at least 1, got " + std::to_string(k));
  topk2_ = k == topk_ ? 0 : k;
  return *this;
}

TaskAlignedAssigner& TaskAlignedAssigner::with_static_shapes(bool on) {
  static_shapes_ = on;
  return *this;
}

TaskAlignedAssigner& TaskAlignedAssigner::with_rotated(bool on) {
  rotated_ = on;
  return *this;
}

TaskAlignedAssigner& TaskAlignedAssigner::with_stal(std::vector<double> strides) {
  stal_ = std::move(strides);
  return *this;
}

void TaskAlignedAssigner::widen_small_sides(at::Tensor wh, const at::Tensor& mask_gt) const {
  const double smallest = stal_[0], widened = stal_.size() > 1 ? stal_[1] : stal_[0];
  const at::Tensor small = (wh < smallest).logical_and_(mask_gt != 0);
  wh.copy_(at::where(small, at::scalar_tensor(widened, wh.options()), wh));
}

at::Tensor TaskAlignedAssigner::candidate_boxes(const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const {
  if (stal_.empty()) return gt_bboxes;
  at::Tensor xywh = xyxy2xywh(gt_bboxes);
  widen_small_sides(xywh.slice(-1, 2, 4), mask_gt);
  return xywh2xyxy(xywh);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> TaskAlignedAssigner::keep_topk2(const at::Tensor& mask_pos_in,
                                                                             const at::Tensor& align_metric) const {
  at::Tensor mask_pos = mask_pos_in;
  if (topk2_ > 0) {
    const int64_t k = std::min<int64_t>(topk2_, mask_pos.size(-1));
    const at::Tensor best = std::get<1>(at::topk(align_metric * mask_pos, k, -1, true));
    at::Tensor keep = at::zeros(mask_pos.sizes(), mask_pos.options());
    keep.scatter_(-1, best, 1.0);
    mask_pos = mask_pos * keep;
  }
  return {mask_pos.argmax(-2), mask_pos.sum(-2), mask_pos};
}

Assignment TaskAlignedAssigner::empty(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes) const {
  const at::Tensor s0 = pd_scores.select(-1, 0);
  return {at::full_like(s0, num_classes_), at::zeros_like(pd_bboxes), at::zeros_like(pd_scores), at::zeros_like(s0),
          at::zeros_like(s0), at::zeros_like(s0)};
}

Assignment TaskAlignedAssigner::operator()(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                                           const at::Tensor& anc_points,
                                           const at::Tensor& gt_labels,
                                           const at::Tensor& gt_bboxes,
                                           const at::Tensor& mask_gt, bool dense_scores) const {
  const bool cpu_float = !rotated_ && pd_scores.device().is_cpu() && pd_scores.scalar_type() == at::kFloat &&
                         pd_bboxes.scalar_type() == at::kFloat && gt_bboxes.scalar_type() == at::kFloat;
  return cpu_float ? sparse(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt, dense_scores)
                   : dense(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt);
}

Assignment TaskAlignedAssigner::dense(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                                      const at::Tensor& anc_points, const at::Tensor& gt_labels,
                                      const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const {
  check_inputs(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt);
  at::NoGradGuard no_grad;
  const int64_t n_max_boxes = gt_bboxes.size(1);
  if (n_max_boxes == 0) return empty(pd_scores, pd_bboxes);
  auto [mask_pos, align_metric, overlaps] =
      get_pos_mask(pd_scores, pd_bboxes, gt_labels, gt_bboxes, anc_points, mask_gt);
  at::Tensor target_gt_idx, fg_mask;
  std::tie(target_gt_idx, fg_mask, mask_pos) =
      select_highest_overlaps(mask_pos, overlaps, n_max_boxes, static_shapes_);
  if (topk2_ > 0) std::tie(target_gt_idx, fg_mask, mask_pos) = keep_topk2(mask_pos, align_metric);

  auto [target_labels, target_bboxes, target_scores] =
      get_targets(gt_labels, gt_bboxes, target_gt_idx, fg_mask);

  // Normalize the metric per GT: best metric -> best IoU of that GT.
  align_metric *= mask_pos;
  const at::Tensor pos_align_metrics = align_metric.amax(-1, true);
  const at::Tensor pos_overlaps = (overlaps * mask_pos).amax(-1, true);
  const at::Tensor norm_align_metric =
      (align_metric * pos_overlaps / (pos_align_metrics + eps_)).amax(-2).unsqueeze(-1);
  target_scores = target_scores * norm_align_metric;
  return {target_labels, target_bboxes, target_scores, fg_mask.to(at::kBool), target_gt_idx, target_scores.sum(-1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> TaskAlignedAssigner::get_targets(
    const at::Tensor& gt_labels, const at::Tensor& gt_bboxes, const at::Tensor& target_gt_idx,
    const at::Tensor& fg_mask) const {
  const int64_t bs = gt_bboxes.size(0), n_max_boxes = gt_bboxes.size(1);
  const at::Tensor batch_ind =
      at::arange(bs, gt_labels.options().dtype(at::kLong)).unsqueeze(-1);
  const at::Tensor flat_idx = target_gt_idx + batch_ind * n_max_boxes;
  at::Tensor target_labels = gt_labels.to(at::kLong).flatten().index({flat_idx});
  const at::Tensor target_bboxes = gt_bboxes.view({-1, gt_bboxes.size(-1)}).index({flat_idx});
  target_labels.clamp_(0);
  at::Tensor target_scores = at::zeros(
      {target_labels.size(0), target_labels.size(1), num_classes_}, target_labels.options());
  target_scores.scatter_(2, target_labels.unsqueeze(-1), 1);
  target_scores = at::where(fg_mask.unsqueeze(-1) > 0, target_scores, at::zeros({}, target_scores.options()));
  return {target_labels, target_bboxes, target_scores};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> TaskAlignedAssigner::get_pos_mask(
    const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& gt_labels,
    const at::Tensor& gt_bboxes, const at::Tensor& anc_points, const at::Tensor& mask_gt) const {
  const at::Tensor mask_in_gts =
      rotated_ ? select_candidates_in_rotated_gts(anc_points, gt_bboxes, mask_gt)
               : select_candidates_in_gts(anc_points, candidate_boxes(gt_bboxes, mask_gt));
  auto [align_metric, overlaps] =
      get_box_metrics(pd_scores, pd_bboxes, gt_labels, gt_bboxes, mask_in_gts * mask_gt);
  const at::Tensor mask_topk =
      select_topk_candidates(align_metric, mask_gt.expand({-1, -1, topk_}).to(at::kBool));
  const at::Tensor mask_pos = mask_topk * mask_in_gts * mask_gt;
  return {mask_pos, align_metric, overlaps};
}

std::pair<at::Tensor, at::Tensor> TaskAlignedAssigner::get_box_metrics(
    const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& gt_labels,
    const at::Tensor& gt_bboxes, const at::Tensor& mask) const {
  const int64_t bs = pd_scores.size(0), n_max_boxes = gt_bboxes.size(1), na = pd_bboxes.size(-2);
  const at::Tensor mask_gt = mask.to(at::kBool);  // b, max_num_obj, h*w

  const at::Tensor ind0 =
      at::arange(bs, at::TensorOptions().dtype(at::kLong).device(pd_scores.device()))
          .view({-1, 1})
          .expand({-1, n_max_boxes});
  const at::Tensor ind1 = gt_labels.squeeze(-1).to(at::kLong);
  // Scores of each anchor for each GT's class: [b, max_num_obj, h*w].
  const at::Tensor gathered = pd_scores.index({ind0, Slice(), ind1});
  at::Tensor overlaps, bbox_scores;
  if (static_shapes_ && !rotated_) {  // every pair, kept where masked: no shape depends on the data
    const at::Tensor iou = bbox_iou(gt_bboxes.unsqueeze(2), pd_bboxes.unsqueeze(1), false, IouKind::CIoU);
    overlaps = at::where(mask_gt, iou.squeeze(-1).clamp_(0), at::zeros({}, pd_bboxes.options()));
    bbox_scores = at::where(mask_gt, gathered, at::zeros({}, pd_scores.options()));
  } else {  // the reference's: only the pairs of the mask computed
    overlaps = at::zeros({bs, n_max_boxes, na}, pd_bboxes.options());
    bbox_scores = at::zeros({bs, n_max_boxes, na}, pd_scores.options());
    bbox_scores.index_put_({mask_gt}, gathered.index({mask_gt}));
    const at::Tensor pd_boxes = pd_bboxes.unsqueeze(1).expand({-1, n_max_boxes, -1, -1}).index({mask_gt});
    const at::Tensor gt_boxes = gt_bboxes.unsqueeze(2).expand({-1, -1, na, -1}).index({mask_gt});
    const at::Tensor iou = rotated_ ? probiou(gt_boxes, pd_boxes) : bbox_iou(gt_boxes, pd_boxes, false, IouKind::CIoU);
    overlaps.index_put_({mask_gt}, iou.squeeze(-1).clamp_(0));
  }
  const at::Tensor align_metric = bbox_scores.pow(alpha_) * overlaps.pow(beta_);
  return {align_metric, overlaps};
}

at::Tensor TaskAlignedAssigner::select_topk_candidates(const at::Tensor& metrics,
                                                       const at::Tensor& topk_mask) const {
  const int64_t k = std::min<int64_t>(topk_, metrics.size(-1));
  at::Tensor topk_idxs = std::get<1>(at::topk(metrics, k, -1, true));
  topk_idxs.masked_fill_(~topk_mask.index({Ellipsis, Slice(0, k)}), 0);
  // One scatter of all k indices; padded GTs (all indices 0) count k > 1 and are dropped.
  at::Tensor count_tensor = at::zeros(metrics.sizes(), metrics.options().dtype(at::kChar));
  count_tensor.scatter_add_(-1, topk_idxs, at::ones_like(topk_idxs, count_tensor.options()));
  count_tensor.masked_fill_(count_tensor > 1, 0);
  return count_tensor.to(metrics.scalar_type());
}

at::Tensor TaskAlignedAssigner::select_candidates_in_gts(const at::Tensor& xy_centers,
                                                         const at::Tensor& gt_bboxes, double eps) {
  const int64_t n_anchors = xy_centers.size(0);
  const int64_t bs = gt_bboxes.size(0), n_boxes = gt_bboxes.size(1);
  const auto lt_rb = gt_bboxes.view({-1, 1, 4}).chunk(2, 2);
  const at::Tensor centers = xy_centers.unsqueeze(0);
  const at::Tensor bbox_deltas = at::cat({centers - lt_rb[0], lt_rb[1] - centers}, 2)
                                     .view({bs, n_boxes, n_anchors, -1});
  return bbox_deltas.amin(3).gt_(eps);
}

at::Tensor TaskAlignedAssigner::select_candidates_in_rotated_gts(const at::Tensor& xy_centers,
                                                                const at::Tensor& gt_bboxes,
                                                                const at::Tensor& mask_gt) const {
  at::Tensor boxes = gt_bboxes.clone();
  if (!stal_.empty()) widen_small_sides(boxes.slice(-1, 2, 4), mask_gt);  // 8.4's STAL, as candidate_boxes
  const at::Tensor corners = xywhr2xyxyxyxy(boxes);  // [B, M, 4, 2]
  const at::Tensor a = corners.select(-2, 0).unsqueeze(2), b = corners.select(-2, 1).unsqueeze(2);
  const at::Tensor d = corners.select(-2, 3).unsqueeze(2);
  const at::Tensor ab = b - a, ad = d - a, ap = xy_centers - a;  // [B, M, 1 or A, 2]
  const at::Tensor norm_ab = (ab * ab).sum(-1), norm_ad = (ad * ad).sum(-1);
  const at::Tensor ap_ab = (ap * ab).sum(-1), ap_ad = (ap * ad).sum(-1);
  return ((ap_ab >= 0) & (ap_ab <= norm_ab) & (ap_ad >= 0) & (ap_ad <= norm_ad)).to(gt_bboxes.scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> TaskAlignedAssigner::select_highest_overlaps(
    const at::Tensor& mask_pos_in, const at::Tensor& overlaps, int64_t n_max_boxes, bool always) {
  at::Tensor mask_pos = mask_pos_in;
  at::Tensor fg_mask = mask_pos.sum(-2);
  if (always || fg_mask.max().item<double>() > 1) {  // an anchor claimed by several GTs
    const at::Tensor mask_multi_gts = (fg_mask.unsqueeze(1) > 1).expand({-1, n_max_boxes, -1});
    const at::Tensor max_overlaps_idx = overlaps.argmax(1);
    at::Tensor is_max_overlaps = at::zeros(mask_pos.sizes(), mask_pos.options());
    is_max_overlaps.scatter_(1, max_overlaps_idx.unsqueeze(1), 1);
    mask_pos = at::where(mask_multi_gts, is_max_overlaps, mask_pos).to(at::kFloat);
    fg_mask = mask_pos.sum(-2);
  }
  const at::Tensor target_gt_idx = mask_pos.argmax(-2);
  return {target_gt_idx, fg_mask, mask_pos};
}

}  // namespace yolotrain::loss
