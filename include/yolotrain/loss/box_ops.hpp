#pragma once

#include <ATen/ATen.h>

namespace yolotrain::loss {

/// Which IoU bbox_iou() returns.
enum class IouKind {
  IoU,   ///< plain intersection over union
  GIoU,  ///< generalized IoU
  DIoU,  ///< distance IoU
  CIoU,  ///< complete IoU (the one the v8 loss and the assigner use)
};

/// Boxes [..., 4] from centre/size (x, y, w, h) to corners (x1, y1, x2, y2), as Ultralytics'
/// ops.xywh2xyxy (half sizes subtracted and added; same dtype).
at::Tensor xywh2xyxy(const at::Tensor& boxes);

/// Boxes [..., 4] from corners (x1, y1, x2, y2) to centre/size (x, y, w, h).
at::Tensor xyxy2xywh(const at::Tensor& boxes);

/// IoU of box1 [..., 4] and box2 [..., 4] (broadcast), shape [..., 1], as Ultralytics'
/// metrics.bbox_iou: with xyxy input (`xywh` false) eps is added to the heights only, and always
/// to the union and to the enclosing diagonal c^2; CIoU's alpha carries no gradient.
at::Tensor bbox_iou(const at::Tensor& box1, const at::Tensor& box2, bool xywh = true,
                    IouKind kind = IouKind::IoU, double eps = 1e-7);

}  // namespace yolotrain::loss
