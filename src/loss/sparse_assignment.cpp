// TaskAlignedAssigner::sparse(): the reference's assignment computed over the (GT, anchor) pairs
// whose anchor lies inside the GT, instead of dense [B, M, A] tensors. The metric (CIoU, score,
// score^alpha * CIoU^beta) is computed with the same ATen functions on the gathered pairs, so its
// values are the dense path's; the choices (top k per GT, an anchor claimed twice, the per-GT
// normalisation) are loops over the pairs that follow the reference's rules one by one.
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/loss/task_aligned_assigner.hpp"

namespace yolotrain::loss {
namespace {

// The candidate pairs: for every real GT (image b, index g), the anchors whose centre is inside it
// by more than eps on all four sides (select_candidates_in_gts), in anchor order, GT by GT.
struct Pairs {
  std::vector<int64_t> gt;      // b * M + g
  std::vector<int64_t> anchor;  // b * A + a
};

Pairs candidate_pairs(const at::Tensor& anchors, const at::Tensor& gt_bboxes, const at::Tensor& valid, float eps) {
  const int64_t B = gt_bboxes.size(0), M = gt_bboxes.size(1), A = anchors.size(0);
  const float* anc = anchors.data_ptr<float>();
  const float* box = gt_bboxes.data_ptr<float>();
  const bool* ok = valid.data_ptr<bool>();
  std::vector<std::vector<int32_t>> inside(static_cast<std::size_t>(B * M));
  at::parallel_for(0, B * M, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bg = begin; bg < end; ++bg) {
      if (!ok[bg]) continue;
      const float x1 = box[4 * bg], y1 = box[4 * bg + 1], x2 = box[4 * bg + 2], y2 = box[4 * bg + 3];
      auto& out = inside[static_cast<std::size_t>(bg)];
      for (int64_t a = 0; a < A; ++a) {
        const float cx = anc[2 * a], cy = anc[2 * a + 1];
        if (std::min(std::min(cx - x1, cy - y1), std::min(x2 - cx, y2 - cy)) > eps)
          out.push_back(static_cast<int32_t>(a));
      }
    }
  });
  Pairs p;
  for (int64_t bg = 0; bg < B * M; ++bg) {
    for (const int32_t a : inside[static_cast<std::size_t>(bg)]) {
      p.gt.push_back(bg);
      p.anchor.push_back((bg / M) * A + a);
    }
  }
  return p;
}

at::Tensor long_tensor(const std::vector<int64_t>& v) {
  return at::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())}, at::kLong).clone();
}

// Ultralytics 8.4's topk2 on the resolved positives: each GT keeps its k positives of highest
// metric (the lower anchor first among equals); the others become background.
void keep_topk2_pairs(std::vector<int64_t>& owner, const std::vector<int64_t>& owner_pair,
                      const std::vector<int64_t>& pair_gt, const float* metric, int64_t k) {
  std::vector<std::vector<int64_t>> by_gt;  // anchors (b * A + a) per GT, in anchor order
  std::vector<int64_t> slot;  // GT (b * M + g) -> index in by_gt
  for (std::size_t ba = 0; ba < owner.size(); ++ba) {
    if (owner[ba] < 0) continue;
    const int64_t p = owner_pair[ba];
    if (p < 0) {  // given to a GT it is not inside: metric 0, never among a GT's best
      owner[ba] = -1;
      continue;
    }
    const auto bg = static_cast<std::size_t>(pair_gt[static_cast<std::size_t>(p)]);
    if (slot.size() <= bg) slot.resize(bg + 1, -1);
    if (slot[bg] < 0) slot[bg] = static_cast<int64_t>(by_gt.size()), by_gt.emplace_back();
    by_gt[static_cast<std::size_t>(slot[bg])].push_back(static_cast<int64_t>(ba));
  }
  for (auto& anchors : by_gt) {
    std::stable_sort(anchors.begin(), anchors.end(), [&](int64_t x, int64_t y) {
      return metric[owner_pair[static_cast<std::size_t>(x)]] > metric[owner_pair[static_cast<std::size_t>(y)]];
    });
    for (std::size_t i = static_cast<std::size_t>(k); i < anchors.size(); ++i)
      owner[static_cast<std::size_t>(anchors[i])] = -1;
  }
}

}  // namespace

Assignment TaskAlignedAssigner::sparse(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                                       const at::Tensor& anc_points, const at::Tensor& gt_labels,
                                       const at::Tensor& gt_bboxes, const at::Tensor& mask_gt,
                                       bool dense_scores) const {
  RECORD_FUNCTION("yolotrain::loss::sparse_assignment", std::vector<c10::IValue>());
  check_inputs(pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt);
  at::NoGradGuard no_grad;
  const int64_t B = pd_scores.size(0), A = pd_scores.size(1), C = pd_scores.size(2), M = gt_bboxes.size(1);
  if (M == 0) return empty(pd_scores, pd_bboxes);
  const at::Tensor boxes = gt_bboxes.contiguous();
  const at::Tensor labels = gt_labels.to(at::kLong).reshape({B, M}).contiguous();
  const Pairs pairs = candidate_pairs(anc_points.to(at::kFloat).contiguous(),
                                      candidate_boxes(boxes, mask_gt).contiguous(),
                                      (mask_gt.reshape({B, M}) != 0).contiguous(), static_cast<float>(eps_));
  const auto P = static_cast<int64_t>(pairs.gt.size());

  // The metric of every pair, with the dense path's functions (get_box_metrics).
  const at::Tensor gt_idx = long_tensor(pairs.gt), anchor_idx = long_tensor(pairs.anchor);
  const at::Tensor pair_labels = labels.view(-1).index_select(0, gt_idx);
  const at::Tensor overlaps = bbox_iou(boxes.view({-1, 4}).index_select(0, gt_idx),
                                       pd_bboxes.reshape({-1, 4}).index_select(0, anchor_idx), false, IouKind::CIoU)
                                  .squeeze(-1)
                                  .clamp_(0)
                                  .contiguous();
  const at::Tensor scores = pd_scores.reshape({-1}).index_select(0, anchor_idx * C + pair_labels);
  const at::Tensor metric = (scores.pow(alpha_) * overlaps.pow(beta_)).contiguous();
  const float* ov = overlaps.data_ptr<float>();
  const float* am = metric.data_ptr<float>();

  // Each GT keeps its topk best pairs (select_topk_candidates): metric descending, the lower
  // anchor first among equals, metric 0 never (see the header).
  std::vector<int64_t> first(static_cast<std::size_t>(B * M + 1), P);
  for (int64_t p = P - 1; p >= 0; --p) first[static_cast<std::size_t>(pairs.gt[static_cast<std::size_t>(p)])] = p;
  for (int64_t bg = B * M - 1; bg >= 0; --bg)
    first[static_cast<std::size_t>(bg)] =
        std::min(first[static_cast<std::size_t>(bg)], first[static_cast<std::size_t>(bg + 1)]);
  const int64_t k = std::min<int64_t>(topk_, A);
  std::vector<char> chosen(static_cast<std::size_t>(P), 0);
  at::parallel_for(0, B * M, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order;
    for (int64_t bg = begin; bg < end; ++bg) {
      const int64_t lo = first[static_cast<std::size_t>(bg)], hi = first[static_cast<std::size_t>(bg + 1)];
      order.resize(static_cast<std::size_t>(hi - lo));
      std::iota(order.begin(), order.end(), lo);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return am[x] > am[y]; });
      for (std::size_t i = 0; i < order.size() && static_cast<int64_t>(i) < k && am[order[i]] > 0; ++i) {
        chosen[static_cast<std::size_t>(order[i])] = 1;
      }
    }
  });

  // An anchor chosen by several GTs goes to the GT of highest overlap among all (first on ties;
  // GT 0 when every overlap is 0, as argmax over zeros): select_highest_overlaps.
  std::vector<int32_t> claims(static_cast<std::size_t>(B * A), 0);
  for (int64_t p = 0; p < P; ++p)
    claims[static_cast<std::size_t>(pairs.anchor[static_cast<std::size_t>(p)])] += chosen[static_cast<std::size_t>(p)];
  std::vector<int64_t> owner(static_cast<std::size_t>(B * A), -1);  // the GT index g of a positive anchor
  std::vector<int64_t> owner_pair(static_cast<std::size_t>(B * A), -1);
  std::vector<float> best(static_cast<std::size_t>(B * A), 0.f);
  for (int64_t p = 0; p < P; ++p) {
    const auto ba = static_cast<std::size_t>(pairs.anchor[static_cast<std::size_t>(p)]);
    const int64_t g = pairs.gt[static_cast<std::size_t>(p)] % M;
    if (claims[ba] == 1 && chosen[static_cast<std::size_t>(p)]) {
      owner[ba] = g, owner_pair[ba] = p;
    } else if (claims[ba] > 1) {
      if (owner[ba] < 0) owner[ba] = 0;  // argmax over an all-zero column
      if (ov[p] > best[ba]) {
        best[ba] = ov[p], owner[ba] = g, owner_pair[ba] = p;
      } else if (owner_pair[ba] < 0 && g == owner[ba]) {
        owner_pair[ba] = p;
      }
    }
  }

  if (topk2_ > 0) keep_topk2_pairs(owner, owner_pair, pairs.gt, am, topk2_);

  // The positives, and each GT's best metric and overlap over them (the normalisation's terms).
  at::Tensor target_gt_idx = at::zeros({B, A}, at::kLong), fg = at::zeros({B, A}, at::kBool);
  int64_t* tgi = target_gt_idx.data_ptr<int64_t>();
  bool* fgp = fg.data_ptr<bool>();
  std::vector<float> gt_best_metric(static_cast<std::size_t>(B * M), 0.f),
      gt_best_overlap(static_cast<std::size_t>(B * M), 0.f);
  for (int64_t ba = 0; ba < B * A; ++ba) {
    if (owner[static_cast<std::size_t>(ba)] < 0) continue;
    tgi[ba] = owner[static_cast<std::size_t>(ba)];
    fgp[ba] = true;
    const int64_t p = owner_pair[static_cast<std::size_t>(ba)];
    if (p < 0) continue;  // given to a GT it is not inside: metric and overlap 0
    const auto bg = static_cast<std::size_t>(pairs.gt[static_cast<std::size_t>(p)]);
    gt_best_metric[bg] = std::max(gt_best_metric[bg], am[p]);
    gt_best_overlap[bg] = std::max(gt_best_overlap[bg], ov[p]);
  }
  // get_targets' labels and boxes (gathered for every anchor, as the reference does), and its
  // one-hot scores times the normalised metric written at the positives only.
  const at::Tensor flat_idx = target_gt_idx + at::arange(B, at::kLong).unsqueeze(-1) * M;
  const at::Tensor target_labels = labels.view(-1).index({flat_idx}).clamp_(0);
  const at::Tensor target_bboxes = gt_bboxes.reshape({-1, 4}).index({flat_idx});
  at::Tensor anchor_scores = at::zeros({B, A}, pd_scores.options()), target_scores;
  if (dense_scores) target_scores = at::zeros({B, A, C}, pd_scores.options());
  float* as = anchor_scores.data_ptr<float>();
  float* ts = dense_scores ? target_scores.data_ptr<float>() : nullptr;
  const int64_t* tl = target_labels.data_ptr<int64_t>();
  const auto eps = static_cast<float>(eps_);
  for (int64_t ba = 0; ba < B * A; ++ba) {
    const int64_t p = owner_pair[static_cast<std::size_t>(ba)];
    if (owner[static_cast<std::size_t>(ba)] < 0 || p < 0) continue;
    const auto bg = static_cast<std::size_t>(pairs.gt[static_cast<std::size_t>(p)]);
    as[ba] = am[p] * gt_best_overlap[bg] / (gt_best_metric[bg] + eps);
    if (ts) ts[ba * C + tl[ba]] = as[ba];
  }
  return {target_labels, target_bboxes, target_scores, fg, target_gt_idx, anchor_scores};
}

}  // namespace yolotrain::loss
