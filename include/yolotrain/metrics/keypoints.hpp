#pragma once

#include <ATen/ATen.h>

namespace yolotrain::metrics {

/// Ultralytics' kpt_iou (Object Keypoint Similarity, cocoeval's form): gt [M, n, 3] (x, y,
/// visibility: only visible ones count) and pred [N, n, >=2] in one space, area [M] (Ultralytics'
/// PoseValidator: the GT box's w * h * 0.53), sigmas [n] -> [M, N] in [0, 1]:
/// sum_k exp(-d_k / ((2 sigma_k)^2 * 2 (area + 1e-7))) over the visible k, over their count + 1e-7.
/// The sigmas: loss::oks_sigmas().
at::Tensor keypoint_oks(const at::Tensor& gt, const at::Tensor& pred, const at::Tensor& area,
                        const at::Tensor& sigmas);

}  // namespace yolotrain::metrics
