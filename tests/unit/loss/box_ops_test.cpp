#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"

#include "catch.hpp"

namespace yl = yolotrain::loss;
using yl::IouKind;

namespace {

double iou_of(const at::Tensor& a, const at::Tensor& b, bool xywh, IouKind kind) {
  const at::Tensor r = yl::bbox_iou(a, b, xywh, kind);
  REQUIRE(r.sizes() == at::IntArrayRef({1}));
  return r.item<double>();
}

}  // namespace

TEST_CASE("bbox_iou gives IoU GIoU DIoU and CIoU of known boxes", "[loss]") {
  // (0,0,10,10) and (5,5,15,15): intersection 25, union 175, enclosing 15x15.
  const at::Tensor a = at::tensor({0.f, 0.f, 10.f, 10.f});
  const at::Tensor b = at::tensor({5.f, 5.f, 15.f, 15.f});
  CHECK(iou_of(a, b, false, IouKind::IoU) == Approx(25.0 / 175.0).epsilon(1e-6));
  CHECK(iou_of(a, b, false, IouKind::GIoU) == Approx(25.0 / 175.0 - 50.0 / 225.0).epsilon(1e-6));
  // rho^2 = (10^2 + 10^2) / 4 = 50, c^2 = 15^2 + 15^2 = 450; same aspect ratio so CIoU = DIoU.
  CHECK(iou_of(a, b, false, IouKind::DIoU) == Approx(25.0 / 175.0 - 50.0 / 450.0).epsilon(1e-6));
  CHECK(iou_of(a, b, false, IouKind::CIoU) == Approx(25.0 / 175.0 - 50.0 / 450.0).epsilon(1e-6));
  // Different aspect ratios: (0,0,10,10) vs (0,0,20,10): IoU 0.5, CIoU 0.446751864 (by hand,
  // with eps 1e-7 on the heights as the reference adds it).
  const at::Tensor c = at::tensor({0.f, 0.f, 20.f, 10.f});
  CHECK(iou_of(a, c, false, IouKind::IoU) == Approx(0.5).epsilon(1e-6));
  CHECK(iou_of(a, c, false, IouKind::CIoU) == Approx(0.44675186356840774).epsilon(1e-6));
  // The same boxes as xywh give the same values.
  const at::Tensor axywh = at::tensor({5.f, 5.f, 10.f, 10.f});
  const at::Tensor cxywh = at::tensor({10.f, 5.f, 20.f, 10.f});
  CHECK(iou_of(axywh, cxywh, true, IouKind::CIoU) == Approx(0.44675186356840774).epsilon(1e-6));
  // Disjoint boxes: IoU 0, GIoU negative.
  const at::Tensor far = at::tensor({20.f, 20.f, 30.f, 30.f});
  CHECK(iou_of(a, far, false, IouKind::IoU) == 0.0);
  CHECK(iou_of(a, far, false, IouKind::GIoU) == Approx(0.0 - (900.0 - 200.0) / 900.0).epsilon(1e-6));
}

TEST_CASE("bbox_iou broadcasts and CIoU has finite gradients", "[loss]") {
  const at::Tensor p = at::tensor({1.f, 1.f, 9.f, 12.f, 0.f, 0.f, 4.f, 4.f}).view({2, 4}).requires_grad_();
  const at::Tensor t = at::tensor({0.f, 0.f, 10.f, 10.f}).view({1, 4});
  const at::Tensor r = yl::bbox_iou(p, t, false, IouKind::CIoU);
  REQUIRE(r.sizes() == at::IntArrayRef({2, 1}));
  (1 - r).sum().backward();
  CHECK(at::isfinite(p.grad()).all().item<bool>());
  CHECK(p.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("xywh2xyxy and xyxy2xywh are inverse", "[loss]") {
  const at::Tensor xywh = at::tensor({10.f, 20.f, 4.f, 6.f, 0.5f, 0.5f, 1.f, 1.f}).view({2, 4});
  const at::Tensor xyxy = yl::xywh2xyxy(xywh);
  CHECK(at::equal(xyxy, at::tensor({8.f, 17.f, 12.f, 23.f, 0.f, 0.f, 1.f, 1.f}).view({2, 4})));
  CHECK(at::allclose(yl::xyxy2xywh(xyxy), xywh));
  CHECK_THROWS_AS(yl::xywh2xyxy(at::zeros({3, 5})), yolotrain::Error);
}
