// Ultralytics 8.4.117 utils/metrics.py kpt_iou.
#include "yolotrain/metrics/keypoints.hpp"

#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::metrics {

at::Tensor keypoint_oks(const at::Tensor& gt, const at::Tensor& pred, const at::Tensor& area,
                        const at::Tensor& sigmas) {
  if (gt.dim() != 3 || gt.size(2) < 3 || pred.dim() != 3 || pred.size(1) != gt.size(1) || pred.size(2) < 2) {
    throw Error("keypoint_oks: expected labels [M, n, 3] and predictions [N, n, >=2], got " + c10::str(gt.sizes()) +
                " and " + c10::str(pred.sizes()));
  }
  const at::Tensor g = gt.to(at::kFloat), p = pred.to(at::kFloat);
  const at::Tensor dx = g.select(2, 0).unsqueeze(1) - p.select(2, 0), dy = g.select(2, 1).unsqueeze(1) - p.select(2, 1);
  const at::Tensor d = dx.pow(2) + dy.pow(2);  // [M, N, n]
  const at::Tensor visible = g.select(2, 2) != 0;  // [M, n]
  const at::Tensor e = d / ((2 * sigmas.to(at::kFloat)).pow(2) * (area.to(at::kFloat).view({-1, 1, 1}) + 1e-7) * 2);
  return ((-e).exp() * visible.unsqueeze(1)).sum(-1) / (visible.sum(-1).unsqueeze(1) + 1e-7);
}

}  // namespace yolotrain::metrics
