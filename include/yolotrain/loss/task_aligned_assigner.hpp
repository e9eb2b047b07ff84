#pragma once

#include <ATen/ATen.h>

#include <tuple>
#include <utility>
#include <vector>

namespace yolotrain::loss {

/// What TaskAlignedAssigner::operator() returns (B = images, A = anchors, C = classes).
struct Assignment {
  at::Tensor target_labels;  ///< [B, A] int64, class of the assigned GT (0 where background)
  at::Tensor target_bboxes;  ///< [B, A, 4] the assigned GT box (xyxy, same units as gt_bboxes)
  at::Tensor target_scores;  ///< [B, A, C] one-hot times the normalized alignment metric
                             ///< (undefined when asked for without dense scores)
  at::Tensor fg_mask;        ///< [B, A] bool, anchors that got a GT
  at::Tensor target_gt_idx;  ///< [B, A] int64, index of the assigned GT within its image
  /// [B, A] target_scores.sum(-1): a positive's one non-zero target score (at its target label),
  /// 0 elsewhere — all the loss needs of the target scores.
  at::Tensor anchor_scores;
};

/// Task-aligned label assignment (TOOD), as Ultralytics' utils/tal.py TaskAlignedAssigner:
/// candidates are anchors whose centre lies strictly inside a GT; the alignment metric is
/// score^alpha * CIoU^beta; each GT keeps its `topk` best candidates; an anchor claimed by several
/// GTs goes to the GT with the highest CIoU among all GTs containing it (first on ties). No
/// gradient is recorded. Two implementations give the same assignment: dense() is the
/// reference's [B, M, A] tensor work (any device, any dtype); sparse() works on the (GT, anchor)
/// pairs with the anchor inside the GT only (CPU float32, where operator() uses it: a few
/// hundred pairs per GT instead of every anchor). They can differ only where the reference's
/// choice is left to torch.topk's handling of equal values: among candidates of equal metric
/// sparse() keeps the lower anchor index, and it never makes a candidate of metric 0 positive
/// (the reference may, from the first `topk` anchors; such a positive has target score 0 and
/// adds nothing to the loss). docs/loss-and-metrics.md.
class TaskAlignedAssigner {
 public:
  /// Ultralytics' class defaults are topk 13, alpha 1.0; the v8 loss uses topk 10, alpha 0.5.
  explicit TaskAlignedAssigner(int64_t topk = 13, int64_t num_classes = 80, double alpha = 1.0,
                               double beta = 6.0, double eps = 1e-9);

  /// pd_scores [B, A, C] (sigmoid), pd_bboxes [B, A, 4] xyxy, anc_points [A, 2],
  /// gt_labels [B, M, 1], gt_bboxes [B, M, 4] xyxy, mask_gt [B, M, 1] (1 for real, 0 for padding).
  /// Boxes and anchors in the same units (the loss uses pixels). M may be 0. `dense_scores`
  /// false lets sparse() leave target_scores undefined (anchor_scores holds their values; the
  /// [B, A, C] zeros cost more than the assignment at a few boxes per image).
  Assignment operator()(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                        const at::Tensor& anc_points, const at::Tensor& gt_labels,
                        const at::Tensor& gt_bboxes, const at::Tensor& mask_gt, bool dense_scores = true) const;
  /// operator() by the reference's dense tensors.
  Assignment dense(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                   const at::Tensor& gt_labels, const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const;
  /// operator() over the candidate pairs (CPU tensors only; float32 scores and boxes).
  Assignment sparse(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                    const at::Tensor& gt_labels, const at::Tensor& gt_bboxes, const at::Tensor& mask_gt,
                    bool dense_scores = true) const;

  /// Ultralytics 8.4's second top-k (E2ELoss' one-to-one assigner: topk 7, topk2 1): once the
  /// claims are resolved, each GT keeps only its `k` positives of highest metric. 0 (or topk):
  /// none, as before 8.4. Returns *this.
  TaskAlignedAssigner& with_topk2(int64_t k);
  /// Ultralytics 8.4's small-target candidates (STAL): for choosing the candidate anchors only, a
  /// GT narrower or lower than `strides[0]` px is widened (heightened) to `strides[1]` around its
  /// centre (strides[0] with one level). Empty: none, as before 8.4. Returns *this.
  TaskAlignedAssigner& with_stal(std::vector<double> strides);
  /// Ultralytics' RotatedTaskAlignedAssigner (the OBB loss's): boxes are xywhr ([.., 5]), the
  /// overlaps ProbIoU instead of CIoU, and the candidates the anchors inside each GT's rotated
  /// rectangle, edges included (with STAL, a side below strides[0] widened first, as 8.4 does).
  /// Always the dense path; static shapes do not apply. Returns *this.
  TaskAlignedAssigner& with_rotated(bool on = true);
  bool rotated() const { return rotated_; }
  /// dense() with static shapes and no host read (the device step): the metrics computed for every
  /// (GT, anchor) pair and kept where the anchor is a candidate (at::where, not boolean-mask
  /// indexing), an anchor claimed twice resolved without first asking whether any is. The same
  /// assignment. Returns *this.
  TaskAlignedAssigner& with_static_shapes(bool on = true);

  int64_t topk() const { return topk_; }
  int64_t topk2() const { return topk2_; }
  const std::vector<double>& stal() const { return stal_; }
  int64_t num_classes() const { return num_classes_; }
  double alpha() const { return alpha_; }
  double beta() const { return beta_; }
  double eps() const { return eps_; }

  /// [B, M, A] mask (float, gt_bboxes' dtype) of anchors whose centre is inside a GT by more
  /// than eps on all four sides.
  static at::Tensor select_candidates_in_gts(const at::Tensor& xy_centers,
                                             const at::Tensor& gt_bboxes, double eps = 1e-9);

  /// [B, M, A] mask (gt_bboxes' dtype) of anchors inside the rotated GTs (with_rotated()).
  at::Tensor select_candidates_in_rotated_gts(const at::Tensor& xy_centers, const at::Tensor& gt_bboxes,
                                              const at::Tensor& mask_gt) const;

  /// Resolves anchors claimed by several GTs: returns (target_gt_idx [B, A], fg_mask [B, A],
  /// mask_pos [B, M, A]) where each positive anchor keeps only the GT of max overlap. `always`:
  /// without reading on the host whether any anchor is claimed twice (the same result).
  static std::tuple<at::Tensor, at::Tensor, at::Tensor> select_highest_overlaps(
      const at::Tensor& mask_pos, const at::Tensor& overlaps, int64_t n_max_boxes, bool always = false);

  /// The GT boxes the candidates are chosen in: gt_bboxes itself without STAL; with it, each real
  /// GT's side below strides[0] set to the STAL size, through xywh as Ultralytics 8.4 does.
  at::Tensor candidate_boxes(const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const;

 private:
  /// STAL (with_stal()): each real GT's side in `wh` [..., 2] (a view, changed in place) below
  /// strides[0] set to strides[1] (strides[0] with one level).
  void widen_small_sides(at::Tensor wh, const at::Tensor& mask_gt) const;
  void check_inputs(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                    const at::Tensor& gt_labels, const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const;
  std::tuple<at::Tensor, at::Tensor, at::Tensor> get_pos_mask(
      const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& gt_labels,
      const at::Tensor& gt_bboxes, const at::Tensor& anc_points, const at::Tensor& mask_gt) const;
  std::pair<at::Tensor, at::Tensor> get_box_metrics(const at::Tensor& pd_scores,
                                                    const at::Tensor& pd_bboxes,
                                                    const at::Tensor& gt_labels,
                                                    const at::Tensor& gt_bboxes,
                                                    const at::Tensor& mask) const;
  at::Tensor select_topk_candidates(const at::Tensor& metrics, const at::Tensor& topk_mask) const;
  std::tuple<at::Tensor, at::Tensor, at::Tensor> get_targets(const at::Tensor& gt_labels,
                                                             const at::Tensor& gt_bboxes,
                                                             const at::Tensor& target_gt_idx,
                                                             const at::Tensor& fg_mask) const;
  Assignment empty(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes) const;

  /// The dense path's topk2 step on mask_pos (after select_highest_overlaps): returns
  /// (target_gt_idx, fg_mask, mask_pos).
  std::tuple<at::Tensor, at::Tensor, at::Tensor> keep_topk2(const at::Tensor& mask_pos,
                                                            const at::Tensor& align_metric) const;

  int64_t topk_;
  int64_t topk2_ = 0;
  std::vector<double> stal_;
  bool static_shapes_ = false;
  bool rotated_ = false;
  int64_t num_classes_;
  double alpha_;
  double beta_;
  double eps_;
};

}  // namespace yolotrain::loss
