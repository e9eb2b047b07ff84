#include "yolotrain/metrics/obb.hpp"

#include <ATen/ATen.h>

#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::metrics {

at::Tensor nms_rotated(const at::Tensor& boxes, const at::Tensor& scores, double iou) {
  if (boxes.dim() != 2 || boxes.size(1) != 5) {
    throw Error("rotated NMS: boxes must be [N, 5] (x y w h angle), got " + c10::str(boxes.sizes()));
  }
  if (boxes.size(0) == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  const at::Tensor order = at::argsort(scores, 0, /*descending=*/true);
  const at::Tensor sorted = boxes.index_select(0, order);
  const at::Tensor overlaps = batch_probiou(sorted, sorted).triu_(1);
  const at::Tensor pick = at::nonzero((overlaps >= iou).sum(0) <= 0).squeeze(-1);
  return order.index_select(0, pick);
}

}  // namespace yolotrain::metrics
