#include "yolotrain/loss/box_ops.hpp"

#include <ATen/core/grad_mode.h>

#include <cmath>

#include "yolotrain/error.hpp"

namespace yolotrain::loss {

namespace {

void check_last_dim4(const at::Tensor& boxes, const char* where) {
  if (!boxes.defined() || boxes.dim() < 1 || boxes.size(-1) != 4) {
    throw Error(std::string(where) + ": boxes must have a last dimension of 4, got shape " +
                (boxes.defined() ? c10::str(boxes.sizes()) : std::string("(undefined)")) +
                "; pass boxes as [..., 4]");
  }
}

}  // namespace

at::Tensor xywh2xyxy(const at::Tensor& boxes) {
  check_last_dim4(boxes, "xywh2xyxy");
  at::Tensor y = at::empty_like(boxes);
  const at::Tensor dw = boxes.select(-1, 2) / 2;
  const at::Tensor dh = boxes.select(-1, 3) / 2;
  y.select(-1, 0).copy_(boxes.select(-1, 0) - dw);
  y.select(-1, 1).copy_(boxes.select(-1, 1) - dh);
  y.select(-1, 2).copy_(boxes.select(-1, 0) + dw);
  y.select(-1, 3).copy_(boxes.select(-1, 1) + dh);
  return y;
}

at::Tensor xyxy2xywh(const at::Tensor& boxes) {
  check_last_dim4(boxes, "xyxy2xywh");
  at::Tensor y = at::empty_like(boxes);
  y.select(-1, 0).copy_((boxes.select(-1, 0) + boxes.select(-1, 2)) / 2);
  y.select(-1, 1).copy_((boxes.select(-1, 1) + boxes.select(-1, 3)) / 2);
  y.select(-1, 2).copy_(boxes.select(-1, 2) - boxes.select(-1, 0));
  y.select(-1, 3).copy_(boxes.select(-1, 3) - boxes.select(-1, 1));
  return y;
}

at::Tensor bbox_iou(const at::Tensor& box1, const at::Tensor& box2, bool xywh, IouKind kind,
                    double eps) {
  check_last_dim4(box1, "bbox_iou (box1)");
  check_last_dim4(box2, "bbox_iou (box2)");
  at::Tensor b1_x1, b1_y1, b1_x2, b1_y2, b2_x1, b2_y1, b2_x2, b2_y2, w1, h1, w2, h2;
  if (xywh) {
    const auto a = box1.chunk(4, -1);
    const auto b = box2.chunk(4, -1);
    w1 = a[2];
    h1 = a[3];
    w2 = b[2];
    h2 = b[3];
    const at::Tensor w1_ = w1 / 2, h1_ = h1 / 2, w2_ = w2 / 2, h2_ = h2 / 2;
    b1_x1 = a[0] - w1_;
    b1_x2 = a[0] + w1_;
    b1_y1 = a[1] - h1_;
    b1_y2 = a[1] + h1_;
    b2_x1 = b[0] - w2_;
    b2_x2 = b[0] + w2_;
    b2_y1 = b[1] - h2_;
    b2_y2 = b[1] + h2_;
  } else {
    const auto a = box1.chunk(4, -1);
    const auto b = box2.chunk(4, -1);
    b1_x1 = a[0], b1_y1 = a[1], b1_x2 = a[2], b1_y2 = a[3];
    b2_x1 = b[0], b2_y1 = b[1], b2_x2 = b[2], b2_y2 = b[3];
    w1 = b1_x2 - b1_x1;
    h1 = b1_y2 - b1_y1 + eps;
    w2 = b2_x2 - b2_x1;
    h2 = b2_y2 - b2_y1 + eps;
  }
  const at::Tensor inter = (at::minimum(b1_x2, b2_x2) - at::maximum(b1_x1, b2_x1)).clamp_(0) *
                           (at::minimum(b1_y2, b2_y2) - at::maximum(b1_y1, b2_y1)).clamp_(0);
  const at::Tensor uni = w1 * h1 + w2 * h2 - inter + eps;
  const at::Tensor iou = inter / uni;
  if (kind == IouKind::IoU) return iou;

  const at::Tensor cw = at::maximum(b1_x2, b2_x2) - at::minimum(b1_x1, b2_x1);  // enclosing width
  const at::Tensor ch = at::maximum(b1_y2, b2_y2) - at::minimum(b1_y1, b2_y1);  // enclosing height
  if (kind == IouKind::GIoU) {
    const at::Tensor c_area = cw * ch + eps;
    return iou - (c_area - uni) / c_area;
  }
  const at::Tensor c2 = cw.pow(2) + ch.pow(2) + eps;  // squared diagonal
  const at::Tensor rho2 =
      ((b2_x1 + b2_x2 - b1_x1 - b1_x2).pow(2) + (b2_y1 + b2_y2 - b1_y1 - b1_y2).pow(2)) / 4;
  if (kind == IouKind::DIoU) return iou - rho2 / c2;
  const double k = 4 / (M_PI * M_PI);
  const at::Tensor v = k * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2);
  at::Tensor alpha;
  {
    at::NoGradGuard no_grad;
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - (rho2 / c2 + v * alpha);
}

}  // namespace yolotrain::loss
