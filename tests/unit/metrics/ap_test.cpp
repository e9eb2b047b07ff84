#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/ap.hpp"
#include "yolotrain/metrics/det_metrics.hpp"

#include "catch.hpp"

#include <vector>

namespace ym = yolotrain::metrics;

namespace {

// tp [N, 10] where detection i is a TP at every threshold when hits[i].
at::Tensor tp_rows(const std::vector<int>& hits) {
  std::vector<at::Tensor> rows;
  for (int h : hits) rows.push_back(at::full({10}, h != 0, at::kBool));
  return at::stack(rows);
}

at::Tensor f(std::vector<float> v) { return at::tensor(v); }

std::vector<bool> column_of(const at::Tensor& tp, int64_t det) {
  std::vector<bool> out;
  for (int64_t k = 0; k < tp.size(1); ++k) out.push_back(tp[det][k].item<bool>());
  return out;
}

}  // namespace

TEST_CASE("iou thresholds are torch linspace 0.5 to 0.95 in float32", "[metrics]") {
  const at::Tensor t = ym::iou_thresholds();
  REQUIRE(t.numel() == 10);
  CHECK(t.scalar_type() == at::kFloat);
  CHECK(t[0].item<double>() == 0.5);
  CHECK(t[1].item<double>() == 0.550000011920929);
  CHECK(t[9].item<double>() == static_cast<double>(0.95f));
}

TEST_CASE("one perfect detection of two objects gives AP 0.75", "[metrics]") {
  // Trapezoid rule with the (1, 0) end point: 0.5 * 1 + the ramp from (0.5, 1) to (1, 0) = 0.75
  // (COCO's 101-point mean would give 0.505).
  const auto r = ym::ap_per_class(tp_rows({1}), f({0.9f}), f({0}), f({0, 0}));
  REQUIRE(r.ap.sizes() == at::IntArrayRef({1, 10}));
  for (int64_t j = 0; j < 10; ++j) CHECK(r.ap[0][j].item<double>() == Approx(0.75).epsilon(1e-12));
  CHECK(r.p[0].item<double>() == Approx(1.0));
  CHECK(r.r[0].item<double>() == Approx(0.5));
  const ym::DetMetrics m = ym::det_metrics(tp_rows({1}), f({0.9f}), f({0}), f({0, 0}));
  CHECK(m.map50 == Approx(0.75).epsilon(1e-12));
  CHECK(m.map == Approx(0.75).epsilon(1e-12));
  CHECK(m.mp == Approx(1.0));
  CHECK(m.mr == Approx(0.5));
  CHECK(m.fitness == Approx(0.75).epsilon(1e-12));
}

TEST_CASE("two perfect detections give AP 0.995 and a miss between hits gives 0.828333", "[metrics]") {
  const auto perfect = ym::ap_per_class(tp_rows({1, 1}), f({0.9f, 0.8f}), f({0, 0}), f({0, 0}));
  CHECK(perfect.ap[0][0].item<double>() == Approx(0.995).epsilon(1e-12));
  // TP, FP, TP for 2 objects: recall 0.5, 0.5, 1; precision 1, 0.5, 2/3. The envelope is 1 up to
  // recall 0.5 and 2/3 after; np.interp at 0.5 takes the last duplicate (2/3):
  // 0.49 + 0.01*(1+2/3)/2 + 0.49*2/3 + 0.01*(2/3)/2 = 0.8283333...
  const auto r = ym::ap_per_class(tp_rows({1, 0, 1}), f({0.9f, 0.8f, 0.7f}), f({0, 0, 0}), f({0, 0}));
  CHECK(r.ap[0][0].item<double>() == Approx(0.49 + 0.01 * (5.0 / 6) + 0.49 * 2 / 3 + 0.01 / 3).epsilon(1e-12));
  // Unsorted input is sorted by confidence first.
  const auto shuffled =
      ym::ap_per_class(tp_rows({1, 1, 0}), f({0.7f, 0.9f, 0.8f}), f({0, 0, 0}), f({0, 0}));
  CHECK(shuffled.ap[0][0].item<double>() == Approx(r.ap[0][0].item<double>()).epsilon(1e-15));
}

// One of two objects found, at precision 1. Ultralytics 8.3's envelope slopes from (0.5, 1) down to
// (1, 0): AP 0.5 + 0.25. 8.4 adds (0.5, 0) first, and np.interp at 0.5 takes that last duplicate:
// 0.49 + 0.01 * (1 + 0) / 2.
TEST_CASE("8.4's compute_ap ends the precision envelope at the last recall reached", "[metrics]") {
  const auto v83 = ym::compute_ap({0.5}, {1.0}, ym::UltralyticsRules::V83);
  const auto v84 = ym::compute_ap({0.5}, {1.0}, ym::UltralyticsRules::V84);
  CHECK(std::get<0>(v83) == Approx(0.75).epsilon(1e-12));
  CHECK(std::get<0>(v84) == Approx(0.495).epsilon(1e-12));
  CHECK(std::get<2>(v84) == std::vector<double>{0.0, 0.5, 0.5, 1.0});
  // Reaching recall 1 makes them agree.
  CHECK(std::get<0>(ym::compute_ap({0.5, 1.0}, {1.0, 1.0}, ym::UltralyticsRules::V84)) ==
        Approx(std::get<0>(ym::compute_ap({0.5, 1.0}, {1.0, 1.0}, ym::UltralyticsRules::V83))).epsilon(1e-12));
}

TEST_CASE("classes with ground truth but no predictions count as zero", "[metrics]") {
  const ym::DetMetrics m = ym::det_metrics(tp_rows({1}), f({0.9f}), f({0}), f({0, 1}));
  REQUIRE(m.ap_class_index == std::vector<int64_t>({0, 1}));
  CHECK(m.ap50[0] == Approx(0.995));
  CHECK(m.ap50[1] == 0.0);
  CHECK(m.p[1] == 0.0);
  CHECK(m.r[1] == 0.0);
  CHECK(m.map50 == Approx(0.995 / 2));
  CHECK(m.map == Approx(0.995 / 2));
  CHECK(m.mr == Approx(0.5));
  CHECK(m.fitness == Approx(0.1 * m.map50 + 0.9 * m.map));
  const std::vector<double> maps = m.maps(3);
  CHECK(maps[0] == Approx(0.995));
  CHECK(maps[1] == 0.0);
  CHECK(maps[2] == Approx(m.map));  // no ground truth: the overall mAP50-95
}

TEST_CASE("prediction-only classes are ignored", "[metrics]") {
  const ym::DetMetrics base = ym::det_metrics(tp_rows({1, 0}), f({0.9f, 0.5f}), f({0, 0}), f({0, 0}));
  const ym::DetMetrics extra =
      ym::det_metrics(tp_rows({1, 0, 0, 0}), f({0.9f, 0.5f, 0.95f, 0.6f}), f({0, 0, 7, 7}), f({0, 0}));
  CHECK(extra.ap_class_index == std::vector<int64_t>({0}));
  CHECK(extra.map50 == base.map50);
  CHECK(extra.map == base.map);
  CHECK(extra.mp == base.mp);
  CHECK(extra.mr == base.mr);
}

TEST_CASE("no true positive at all gives all zeros", "[metrics]") {
  const ym::DetMetrics m = ym::det_metrics(tp_rows({0, 0}), f({0.9f, 0.8f}), f({0, 1}), f({0, 1}));
  CHECK(m.mp == 0.0);
  CHECK(m.mr == 0.0);
  CHECK(m.map50 == 0.0);
  CHECK(m.map == 0.0);
  CHECK(m.fitness == 0.0);
  CHECK(m.ap_class_index.empty());
  const ym::DetMetrics none = ym::det_metrics(at::zeros({0, 10}, at::kBool), f({}), f({}), f({0}));
  CHECK(none.map == 0.0);
}

TEST_CASE("matching gives a label to the lowest-index detection not the best IoU", "[metrics]") {
  // One label, two detections of its class: d0 (higher confidence) IoU 0.62, d1 IoU 0.92.
  const at::Tensor iou = f({0.62f, 0.92f}).view({1, 2});
  const at::Tensor tp = ym::match_predictions(f({0, 0}), f({0}), iou);
  REQUIRE(tp.sizes() == at::IntArrayRef({2, 10}));
  // Thresholds 0.5, 0.55, 0.6: both qualify and d0 wins; 0.65 .. 0.9: only d1; 0.95: none.
  CHECK(column_of(tp, 0) == std::vector<bool>({1, 1, 1, 0, 0, 0, 0, 0, 0, 0}));
  CHECK(column_of(tp, 1) == std::vector<bool>({0, 0, 0, 1, 1, 1, 1, 1, 1, 0}));
}

TEST_CASE("matching keeps each detection's best label and ignores other classes", "[metrics]") {
  // Labels L0, L1 (class 0) and L2 (class 1); detections d0, d1 of class 0.
  // d0: IoU 0.7 with L0, 0.8 with L1; d1: 0.6 with L0; L2 overlaps d0 perfectly but is class 1.
  const at::Tensor iou = f({0.7f, 0.6f, 0.8f, 0.f, 1.f, 0.f}).view({3, 2});
  const at::Tensor tp = ym::match_predictions(f({0, 0}), f({0, 0, 1}), iou);
  // At 0.5: d0 -> L1 (its best), d1 -> L0. Both are true positives.
  CHECK(tp[0][0].item<bool>());
  CHECK(tp[1][0].item<bool>());
  // At 0.65: d1 no longer qualifies; d0 still matches L1.
  CHECK(tp[0][3].item<bool>());
  CHECK_FALSE(tp[1][3].item<bool>());
  // At 0.85 nothing of class 0 qualifies; L2's IoU 1 does not count for a class-0 detection.
  CHECK_FALSE(tp[0][7].item<bool>());
  CHECK(ym::match_predictions(f({}), f({0}), at::zeros({1, 0})).sizes() == at::IntArrayRef({0, 10}));
  CHECK_THROWS_AS(ym::match_predictions(f({0}), f({0}), at::zeros({2, 1})), yolotrain::Error);
}

TEST_CASE("interp follows numpy at repeated abscissas and outside the range", "[metrics]") {
  const std::vector<double> xp = {0, 0.5, 0.5, 1}, fp = {1, 1, 0.6, 0};
  const auto y = ym::interp({-1, 0.25, 0.5, 0.75, 1, 2}, xp, fp);
  CHECK(y == std::vector<double>({1, 1, 0.6, 0.3, 0, 0}));
  const auto z = ym::interp({-1, 2}, xp, fp, 7.0, 9.0);
  CHECK(z == std::vector<double>({7, 9}));
}

TEST_CASE("smooth is a box filter with edge padding", "[metrics]") {
  std::vector<double> y(1000, 0.25);
  const auto s = ym::smooth(y, 0.1);
  REQUIRE(s.size() == 1000);
  CHECK(s[0] == Approx(0.25).epsilon(1e-14));
  std::vector<double> step(1000, 0.0);
  for (size_t i = 500; i < 1000; ++i) step[i] = 1.0;
  const auto t = ym::smooth(step, 0.1);  // 101-wide window
  CHECK(t[449] == Approx(0.0).margin(1e-15));
  CHECK(t[500] == Approx(51.0 / 101).epsilon(1e-12));
  CHECK(t[550] == Approx(1.0).epsilon(1e-12));
}
