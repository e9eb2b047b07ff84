#pragma once
// The class term of the detection loss on one level, with its own backward.
#include <ATen/Tensor.h>

namespace yolotrain::loss::detail {

/// One level's part of Ultralytics' BCEWithLogits(pred_scores, target_scores).sum(): logits x
/// [B, C, H, W] (a view of the level's output) against targets that are 0 except t [n] at the
/// positives' (image [n], class [n], anchor [n], the anchor within the level). The value is
/// sum(softplus(x)) - sum(x * t); the gradient, sigmoid(x) - t, is written once. With `weights`
/// [C] (DetectionLossOptions::class_weights; undefined: none) each class's part is multiplied by
/// its weight, as Ultralytics 8.4's `bce_loss *= self.class_weights`.
at::Tensor class_term(const at::Tensor& x, const at::Tensor& image, const at::Tensor& cls, const at::Tensor& anchor,
                      const at::Tensor& t, const at::Tensor& weights = {});

}  // namespace yolotrain::loss::detail
