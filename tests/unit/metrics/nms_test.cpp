#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/nms.hpp"

#include "catch.hpp"

#include <vector>

namespace ym = yolotrain::metrics;

namespace {

// One image's predictions from rows (x, y, w, h, score_0, ..., score_nc-1) -> [1, 4 + nc, A].
at::Tensor image(const std::vector<std::vector<float>>& rows) {
  std::vector<at::Tensor> cols;
  for (const auto& r : rows) cols.push_back(at::tensor(r));
  return at::stack(cols, 1).unsqueeze(0);
}

at::Tensor row(std::vector<float> v) { return at::tensor(v); }

}  // namespace

TEST_CASE("nms suppresses within a class but not across classes unless agnostic", "[metrics]") {
  const at::Tensor pred = image({{50, 50, 20, 20, 0.9f, 0.f},    // class 0
                                 {52, 50, 20, 20, 0.8f, 0.f},    // class 0, IoU 0.82 with the first
                                 {52, 50, 20, 20, 0.f, 0.7f}});  // class 1, same place
  ym::NmsOptions o;
  const auto out = ym::non_max_suppression(pred, o);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].sizes() == at::IntArrayRef({2, 6}));
  CHECK(at::allclose(out[0][0], row({40, 40, 60, 60, 0.9f, 0})));
  CHECK(at::allclose(out[0][1], row({42, 40, 62, 60, 0.7f, 1})));
  o.agnostic = true;
  const auto agn = ym::non_max_suppression(pred, o);
  REQUIRE(agn[0].size(0) == 1);
  CHECK(agn[0][0][4].item<float>() == 0.9f);
}

TEST_CASE("nms suppresses only when IoU is strictly above the threshold", "[metrics]") {
  // xyxy (0,0,10,10) and (0,0,10,20): IoU exactly 0.5.
  const at::Tensor boxes = at::tensor({0.f, 0.f, 10.f, 10.f, 0.f, 0.f, 10.f, 20.f}).view({2, 4});
  const at::Tensor scores = at::tensor({0.9f, 0.8f});
  CHECK(ym::nms(boxes, scores, 0.5).numel() == 2);
  CHECK(ym::nms(boxes, scores, 0.49).numel() == 1);
  // Keep order is by descending score, whatever the input order.
  const at::Tensor keep = ym::nms(boxes, at::tensor({0.1f, 0.8f}), 0.6);
  CHECK(at::equal(keep, at::tensor({1, 0}, at::kLong)));
  CHECK(ym::nms(at::zeros({0, 4}), at::zeros({0}), 0.5).numel() == 0);
}

TEST_CASE("nms keeps candidates whose score is strictly above conf", "[metrics]") {
  const at::Tensor pred = image({{10, 10, 4, 4, 0.25f, 0.f}, {50, 50, 4, 4, 0.2500001f, 0.f}});
  const auto out = ym::non_max_suppression(pred, {});
  REQUIRE(out[0].size(0) == 1);
  CHECK(out[0][0][0].item<float>() == 48.f);
}

TEST_CASE("nms multi_label emits one row per class above conf", "[metrics]") {
  const at::Tensor pred = image({{10, 10, 4, 4, 0.6f, 0.5f, 0.1f}});
  ym::NmsOptions o;
  o.multi_label = true;
  const auto out = ym::non_max_suppression(pred, o);
  REQUIRE(out[0].sizes() == at::IntArrayRef({2, 6}));
  CHECK(at::allclose(out[0][0], row({8, 8, 12, 12, 0.6f, 0})));
  CHECK(at::allclose(out[0][1], row({8, 8, 12, 12, 0.5f, 1})));
  o.multi_label = false;
  CHECK(ym::non_max_suppression(pred, o)[0].size(0) == 1);
  // With one class multi_label changes nothing.
  o.multi_label = true;
  CHECK(ym::non_max_suppression(image({{10, 10, 4, 4, 0.6f}}), o)[0].size(0) == 1);
}

TEST_CASE("nms truncates to max_det and max_nms and filters classes", "[metrics]") {
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 6; ++i) {
    const float s = 0.3f + 0.1f * static_cast<float>(i);
    rows.push_back({20.f * static_cast<float>(i) + 5, 5, 4, 4, i % 2 ? 0.f : s, i % 2 ? s : 0.f});
  }
  const at::Tensor pred = image(rows);  // six disjoint boxes, scores 0.3 .. 0.8
  ym::NmsOptions o;
  o.max_det = 3;
  const auto out = ym::non_max_suppression(pred, o);
  REQUIRE(out[0].size(0) == 3);
  CHECK(at::allclose(out[0].select(1, 4), at::tensor({0.8f, 0.7f, 0.6f})));
  o.max_det = 300;
  o.max_nms = 2;
  const auto top2 = ym::non_max_suppression(pred, o);
  CHECK(at::allclose(top2[0].select(1, 4), at::tensor({0.8f, 0.7f})));
  o.max_nms = 30000;
  o.classes = std::vector<int64_t>{1};
  const auto only1 = ym::non_max_suppression(pred, o);
  CHECK(at::allclose(only1[0].select(1, 4), at::tensor({0.8f, 0.6f, 0.4f})));
  CHECK(at::all(only1[0].select(1, 5) == 1).item<bool>());
}

TEST_CASE("nms returns an empty [0 6] tensor for images without candidates", "[metrics]") {
  at::Tensor pred = at::zeros({2, 6, 5});
  pred[1][4][2] = 0.9f;
  pred[1][2][2] = 2.f;
  pred[1][3][2] = 2.f;
  const auto out = ym::non_max_suppression(pred, {});
  REQUIRE(out.size() == 2);
  CHECK(out[0].sizes() == at::IntArrayRef({0, 6}));
  CHECK(out[1].sizes() == at::IntArrayRef({1, 6}));
  CHECK_THROWS_AS(ym::non_max_suppression(at::zeros({1, 4, 5}), {}), yolotrain::Error);
  // The input is not modified (the reference converts xywh in place).
  const at::Tensor copy = pred.clone();
  ym::non_max_suppression(pred, {});
  CHECK(at::equal(copy, pred));
}

TEST_CASE("nms per-class split gives the same rows as one suppression over offset boxes", "[metrics]") {
  at::manual_seed(5);
  const int64_t n = 600, nc = 4;
  const at::Tensor xy = at::rand({n, 2}) * 200, wh = at::rand({n, 2}) * 50 + 2;
  const at::Tensor scores = at::rand({n, nc}).pow(2);
  const at::Tensor pred = at::cat({xy, wh, scores}, 1).t().unsqueeze(0).contiguous();
  ym::NmsOptions o;
  o.multi_label = true;
  o.max_det = 100000;
  const at::Tensor got = ym::non_max_suppression(pred, o)[0];
  // The reference's way: all candidates, boxes offset by cls * 7680, one torchvision-style pass.
  std::vector<at::Tensor> rows;
  const at::Tensor xyxy = at::cat({xy - wh / 2, xy + wh / 2}, 1);
  const auto ij = at::where(scores > o.conf);
  const at::Tensor x = at::cat({xyxy.index({ij[0]}), scores.index({ij[0], ij[1]}).unsqueeze(1),
                                ij[1].unsqueeze(1).to(at::kFloat)}, 1);
  const at::Tensor keep = ym::nms(x.slice(1, 0, 4) + x.slice(1, 5, 6) * 7680, x.select(1, 4), o.iou);
  REQUIRE(got.size(0) > 50);
  CHECK(at::equal(got, x.index({keep})));
}

TEST_CASE("nms class offset lets far-away boxes of another class suppress as the reference does", "[metrics]") {
  // A class-0 box at (7680..7780) lands, after class offsets, exactly on a class-1 box at
  // (0..100) + 7680: the reference suppresses it, and so do we (no per-class split here).
  const at::Tensor pred = image({{7730, 7730, 100, 100, 0.9f, 0.f}, {50, 50, 100, 100, 0.f, 0.8f}});
  const auto out = ym::non_max_suppression(pred, {});
  REQUIRE(out[0].size(0) == 1);
  CHECK(out[0][0][5].item<float>() == 0.f);
}
