#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/boxes.hpp"
#include "yolotrain/metrics/validator.hpp"

#include "catch.hpp"

#include <vector>

namespace ym = yolotrain::metrics;

namespace {

at::Tensor floats(std::vector<float> v) { return at::tensor(v); }

// Normalized xywh of an xyxy box in a 320x320 input.
std::vector<float> norm_xywh(float x1, float y1, float x2, float y2) {
  return {(x1 + x2) / 2 / 320, (y1 + y2) / 2 / 320, (x2 - x1) / 320, (y2 - y1) / 320};
}

}  // namespace

TEST_CASE("box_iou of known boxes", "[metrics]") {
  const at::Tensor a = floats({0, 0, 10, 10, 0, 0, 20, 10}).view({2, 4});
  const at::Tensor b = floats({5, 5, 15, 15, 0, 0, 10, 10, 100, 100, 110, 110}).view({3, 4});
  const at::Tensor iou = ym::box_iou(a, b);
  REQUIRE(iou.sizes() == at::IntArrayRef({2, 3}));
  CHECK(iou[0][0].item<double>() == Approx(25.0 / 175).epsilon(1e-6));
  CHECK(iou[0][1].item<double>() == Approx(1.0).epsilon(1e-6));
  CHECK(iou[0][2].item<double>() == 0.0);
  CHECK(iou[1][1].item<double>() == Approx(0.5).epsilon(1e-6));
  CHECK_THROWS_AS(ym::box_iou(at::zeros({2, 3}), b), yolotrain::Error);
}

TEST_CASE("scale_boxes undoes a letterbox and clips", "[metrics]") {
  // 480x640 (h, w) letterboxed into 640x640: gain 1, padding (0, 80) recomputed from the shapes.
  at::Tensor boxes = floats({10, 90, 110, 190, -5, 60, 700, 100}).view({2, 4});
  ym::scale_boxes({640, 640}, boxes, {480, 640});
  CHECK(at::allclose(boxes, floats({10, 10, 110, 110, 0, 0, 640, 20}).view({2, 4})));
  // Given ratio_pad: gain 0.5, padding (8, 4).
  at::Tensor b2 = floats({18, 14, 58, 54}).view({1, 4});
  ym::scale_boxes({320, 320}, b2, {1000, 1000}, ym::RatioPad{{0.5, 0.5}, {8, 4}});
  CHECK(at::allclose(b2, floats({20, 20, 100, 100}).view({1, 4})));
}

TEST_CASE("validator scores letterboxed perfect predictions and misses", "[metrics]") {
  ym::Validator v(2);
  // Image 0: 240x320 original in a 320x320 input, padding (0, 40). Two objects, both found.
  std::vector<float> gt0 = norm_xywh(100, 90, 200, 190);
  const std::vector<float> gt1 = norm_xywh(10, 50, 60, 80);
  gt0.insert(gt0.end(), gt1.begin(), gt1.end());
  const at::Tensor pred0 = floats({100, 90, 200, 190, 0.9f, 0, 10, 50, 60, 80, 0.8f, 1}).view({2, 6});
  // Image 1: 640x640 original at gain 0.5, one class-0 object and no prediction.
  const at::Tensor bboxes = at::cat({floats(gt0).view({2, 4}), floats(norm_xywh(0, 0, 50, 50)).view({1, 4})});
  const std::vector<ym::ImageInfo> infos = {{{240, 320}, ym::RatioPad{{1, 1}, {0, 40}}},
                                            {{640, 640}, ym::RatioPad{{0.5, 0.5}, {0, 0}}}};
  v.update({pred0, at::zeros({0, 6})}, floats({0, 0, 1}), floats({0, 1, 0}).view({3, 1}), bboxes, {320, 320},
           infos);
  CHECK(v.seen() == 2);
  CHECK(v.nt_per_class() == std::vector<int64_t>({2, 1}));
  CHECK(v.tp().all().item<bool>());
  const ym::DetMetrics m = v.finalize();
  // Class 0: 1 of 2 found (0.75); class 1: 1 of 1 (0.995).
  REQUIRE(m.ap_class_index == std::vector<int64_t>({0, 1}));
  CHECK(m.ap50[0] == Approx(0.75));
  CHECK(m.ap50[1] == Approx(0.995));
  CHECK(m.map50 == Approx((0.75 + 0.995) / 2));
  CHECK(m.map == Approx((0.75 + 0.995) / 2));
  CHECK(m.mr == Approx(0.75));
  v.reset();
  CHECK(v.seen() == 0);
  CHECK(v.finalize().map == 0.0);
}

TEST_CASE("validator counts a shifted prediction only at low IoU thresholds", "[metrics]") {
  ym::Validator v;
  // GT (0,0,100,100); prediction (0,0,100,80) in a 100x100 image: IoU 0.8.
  const at::Tensor pred = floats({0, 0, 100, 80, 0.9f, 0}).view({1, 6});
  v.update(pred, floats({0}), floats({0.5f, 0.5f, 1.f, 1.f}).view({1, 4}), {100, 100},
           ym::ImageInfo{{100, 100}, std::nullopt});
  const at::Tensor tp = v.tp();
  REQUIRE(tp.sizes() == at::IntArrayRef({1, 10}));
  for (int64_t k = 0; k < 10; ++k) CHECK(tp[0][k].item<bool>() == (k <= 6));  // 0.5 .. 0.8
  const ym::DetMetrics m = v.finalize();
  CHECK(m.map50 == Approx(0.995));
  CHECK(m.map == Approx(0.995 * 7 / 10));
  CHECK(m.map75 == Approx(0.995));
  CHECK(m.fitness == Approx(0.1 * 0.995 + 0.9 * 0.995 * 0.7));
  CHECK_THROWS_AS(v.update(at::zeros({1, 5}), floats({}), at::zeros({0, 4}), {100, 100}, {}), yolotrain::Error);
}

TEST_CASE("validator recomputes the letterbox without ratio_pad and checks batch counts", "[metrics]") {
  ym::Validator v;
  // 480x640 original in a 640x640 input: gain 1, padding (0, 80). GT (10,10,110,110) original.
  const at::Tensor pred = floats({10, 90, 110, 190, 0.5f, 0}).view({1, 6});
  const at::Tensor gt = floats({60.f / 640, 140.f / 640, 100.f / 640, 100.f / 640}).view({1, 4});
  v.update({pred}, floats({0}), floats({0}).view({1, 1}), gt, {640, 640}, {ym::ImageInfo{{480, 640}, std::nullopt}});
  CHECK(v.tp().all().item<bool>());
  CHECK(v.finalize().map == Approx(0.995));
  // A prediction-only image adds a false positive below the true one: AP unchanged, P at the
  // chosen confidence still 1 (the FP has lower confidence).
  v.update(floats({0, 0, 50, 50, 0.1f, 0}).view({1, 6}), floats({}), at::zeros({0, 4}), {640, 640},
           ym::ImageInfo{{640, 640}, std::nullopt});
  CHECK(v.seen() == 2);
  CHECK(v.conf().numel() == 2);
  CHECK(v.finalize().map50 == Approx(0.995));
  CHECK_THROWS_AS(v.update({pred, pred}, floats({0}), floats({0}).view({1, 1}), gt, {640, 640},
                           {ym::ImageInfo{{480, 640}, std::nullopt}}),
                  yolotrain::Error);
}
