// Ultralytics 8.4.117 utils/metrics.py _get_covariance_matrix, probiou, batch_probiou; utils/ops.py
// xywhr2xyxyxyxy; utils/tal.py rbox2dist.
#include "yolotrain/loss/rotated_box_ops.hpp"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::loss {
namespace {

void require_xywhr(const at::Tensor& boxes, const char* name) {
  if (boxes.dim() != 2 || boxes.size(1) != 5) {
    throw Error(std::string("oriented boxes: ") + name + " must be [N, 5] (x y w h angle), got " +
                c10::str(boxes.sizes()));
  }
}

// The overlap of Gaussians (a1, b1, c1) at (x1, y1) and (a2, b2, c2) at (x2, y2), broadcast: probiou's
// arithmetic, shared by the row-wise and the all-pairs forms.
at::Tensor gaussian_overlap(const at::Tensor& x1, const at::Tensor& y1, const at::Tensor& a1, const at::Tensor& b1,
                            const at::Tensor& c1, const at::Tensor& x2, const at::Tensor& y2, const at::Tensor& a2,
                            const at::Tensor& b2, const at::Tensor& c2, double eps) {
  const at::Tensor a = a1 + a2, b = b1 + b2, c = c1 + c2;
  const at::Tensor det = a * b - c.pow(2);
  const at::Tensor t1 = ((a * (y1 - y2).pow(2) + b * (x1 - x2).pow(2)) / (det + eps)) * 0.25;
  const at::Tensor t2 = ((c * (x2 - x1) * (y1 - y2)) / (det + eps)) * 0.5;
  const at::Tensor own = ((a1 * b1 - c1.pow(2)).clamp_(0) * (a2 * b2 - c2.pow(2)).clamp_(0)).sqrt();
  const at::Tensor t3 = (det / (4 * own + eps) + eps).log() * 0.5;
  const at::Tensor bd = (t1 + t2 + t3).clamp(eps, 100.0);
  return 1 - (1.0 - (-bd).exp() + eps).sqrt();
}

}  // namespace

void obb_covariance(const at::Tensor& boxes, at::Tensor& a, at::Tensor& b, at::Tensor& c, double floor) {
  const at::Tensor wh = boxes.slice(1, 2, 4).pow(2) / 12 + floor;
  const at::Tensor r = boxes.slice(1, 4, 5);
  const at::Tensor w = wh.slice(1, 0, 1), h = wh.slice(1, 1, 2);
  const at::Tensor cos = r.cos(), sin = r.sin(), cos2 = cos.pow(2), sin2 = sin.pow(2);
  a = w * cos2 + h * sin2;
  b = w * sin2 + h * cos2;
  c = (w - h) * cos * sin;
}

at::Tensor probiou(const at::Tensor& obb1, const at::Tensor& obb2, bool ciou, double eps, double floor) {
  require_xywhr(obb1, "obb1");
  require_xywhr(obb2, "obb2");
  at::Tensor a1, b1, c1, a2, b2, c2;
  obb_covariance(obb1, a1, b1, c1, floor);
  obb_covariance(obb2, a2, b2, c2, floor);
  const at::Tensor iou = gaussian_overlap(obb1.slice(1, 0, 1), obb1.slice(1, 1, 2), a1, b1, c1, obb2.slice(1, 0, 1),
                                          obb2.slice(1, 1, 2), a2, b2, c2, eps);
  if (!ciou) return iou;
  const at::Tensor w1 = obb1.slice(1, 2, 3), h1 = obb1.slice(1, 3, 4);
  const at::Tensor w2 = obb2.slice(1, 2, 3), h2 = obb2.slice(1, 3, 4);
  const at::Tensor v = (4 / (M_PI * M_PI)) * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2);
  at::Tensor alpha;
  {
    c10::AutoGradMode no_grad(false);  // torch.no_grad(), as Ultralytics computes alpha
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - v * alpha;
}

at::Tensor batch_probiou(const at::Tensor& obb1, const at::Tensor& obb2, double eps) {
  require_xywhr(obb1, "obb1");
  require_xywhr(obb2, "obb2");
  at::Tensor a1, b1, c1, a2, b2, c2;
  obb_covariance(obb1, a1, b1, c1);
  obb_covariance(obb2, a2, b2, c2);
  const auto row = [](const at::Tensor& t) { return t.squeeze(-1).unsqueeze(0); };  // [M, 1] -> [1, M]
  return gaussian_overlap(obb1.slice(1, 0, 1), obb1.slice(1, 1, 2), a1, b1, c1, row(obb2.slice(1, 0, 1)),
                          row(obb2.slice(1, 1, 2)), row(a2), row(b2), row(c2), eps);
}

at::Tensor xywhr2xyxyxyxy(const at::Tensor& boxes) {
  const at::Tensor ctr = boxes.slice(-1, 0, 2);
  const at::Tensor w = boxes.slice(-1, 2, 3), h = boxes.slice(-1, 3, 4), angle = boxes.slice(-1, 4, 5);
  const at::Tensor cos = angle.cos(), sin = angle.sin();
  const at::Tensor vec1 = at::cat({w / 2 * cos, w / 2 * sin}, -1);
  const at::Tensor vec2 = at::cat({-h / 2 * sin, h / 2 * cos}, -1);
  return at::stack({ctr + vec1 + vec2, ctr + vec1 - vec2, ctr - vec1 - vec2, ctr - vec1 + vec2}, -2);
}

at::Tensor rbox2dist(const at::Tensor& xywh, const at::Tensor& anchor_points, const at::Tensor& angle,
                     std::optional<double> reg_max) {
  const at::Tensor offset = xywh.slice(-1, 0, 2) - anchor_points;
  const at::Tensor ox = offset.slice(-1, 0, 1), oy = offset.slice(-1, 1, 2);
  const at::Tensor cos = angle.cos(), sin = angle.sin();
  const at::Tensor xf = ox * cos + oy * sin, yf = -ox * sin + oy * cos;
  const at::Tensor w = xywh.slice(-1, 2, 3), h = xywh.slice(-1, 3, 4);
  at::Tensor dist = at::cat({w / 2 - xf, h / 2 - yf, w / 2 + xf, h / 2 + yf}, -1);
  if (reg_max) dist.clamp_(0, *reg_max - 0.01);
  return dist;
}

}  // namespace yolotrain::loss
