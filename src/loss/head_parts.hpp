#pragma once
// The loss's views of the head's raw outputs, shared by DetectionLoss' two paths (the positives'
// terms in detection_loss.cpp, the device step's dense terms in dense_terms.cpp).
#include <ATen/ATen.h>

#include <vector>

namespace yolotrain::loss::detail {

// Each level's raw output split into its box distributions [B, 4*reg_max, H, W] and class logits
// [B, nc, H, W] (views: the backward of split writes each level's gradient once).
struct LevelParts {
  std::vector<at::Tensor> distri, logits;
};

inline LevelParts split_levels(const std::vector<at::Tensor>& feats, int64_t nc, int64_t reg_max) {
  LevelParts p;
  for (const at::Tensor& f : feats) {
    const auto parts = f.split_with_sizes({4 * reg_max, nc}, 1);
    p.distri.push_back(parts[0]);
    p.logits.push_back(parts[1]);
  }
  return p;
}

// The levels' [B, C, H, W] parts as one [B, A, C] tensor, anchors in make_anchors' order.
inline at::Tensor anchors_last(const std::vector<at::Tensor>& parts) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : parts) flat.push_back(t.flatten(2).transpose(1, 2));
  return at::cat(flat, 1);
}

// 8.4's L1 term (reg_max 1): |predicted - target| ltrb distances in image fractions (times the
// stride, over the width for l and r, the height for t and b), mean over the sides -> [n, 1].
inline at::Tensor l1_term(const at::Tensor& fg_dist, const at::Tensor& target_ltrb, const at::Tensor& fg_strides,
                          const at::Tensor& imgsz) {
  const at::Tensor wh = imgsz.flip(0).repeat({2});  // w, h, w, h
  const at::Tensor target = target_ltrb * fg_strides / wh;
  const at::Tensor pred = fg_dist * fg_strides / wh;
  return at::l1_loss(pred, target, at::Reduction::None).mean(-1, true);
}

}  // namespace yolotrain::loss::detail
