#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/nn/anchors.hpp"

#include "catch.hpp"

namespace nn = yolotrain::nn;

TEST_CASE("make_anchors orders cells row-major per level with half-cell offsets", "[nn]") {
  const std::vector<at::Tensor> feats = {at::zeros({1, 3, 2, 3}), at::zeros({1, 3, 1, 2})};
  const auto [points, strides] = nn::make_anchors(feats, {8.0, 16.0});
  const at::Tensor want = at::tensor({0.5f, 0.5f, 1.5f, 0.5f, 2.5f, 0.5f,   // level 0, row 0
                                      0.5f, 1.5f, 1.5f, 1.5f, 2.5f, 1.5f,   // level 0, row 1
                                      0.5f, 0.5f, 1.5f, 0.5f})              // level 1
                              .view({8, 2});
  CHECK(at::equal(points, want));
  CHECK(at::equal(strides, at::tensor({8.f, 8.f, 8.f, 8.f, 8.f, 8.f, 16.f, 16.f}).view({8, 1})));
  const auto [p0, s0] = nn::make_anchors(feats, {8.0, 16.0}, 0.0);
  CHECK(p0[0][0].item<float>() == 0.f);
  CHECK(p0[5][1].item<float>() == 1.f);
  CHECK_THROWS_AS(nn::make_anchors(feats, {8.0}), yolotrain::Error);
}

TEST_CASE("dist2bbox and bbox2dist round-trip and bbox2dist clamps", "[nn]") {
  const at::Tensor anchors = at::tensor({2.5f, 3.5f, 10.5f, 0.5f}).view({2, 2});
  const at::Tensor dist = at::tensor({1.f, 2.f, 3.f, 4.f, 0.25f, 0.5f, 5.f, 6.f}).view({2, 4});
  const at::Tensor xyxy = nn::dist2bbox(dist, anchors, false);
  CHECK(at::equal(xyxy, at::tensor({1.5f, 1.5f, 5.5f, 7.5f, 10.25f, 0.f, 15.5f, 6.5f}).view({2, 4})));
  const at::Tensor xywh = nn::dist2bbox(dist, anchors, true);
  CHECK(at::equal(xywh, at::tensor({3.5f, 4.5f, 4.f, 6.f, 12.875f, 3.25f, 5.25f, 6.5f}).view({2, 4})));
  CHECK(at::allclose(nn::bbox2dist(anchors, xyxy, 15), dist));
  // Distances beyond reg_max - 0.01 and negative ones are clamped.
  const at::Tensor big = at::tensor({-10.f, 0.f, 40.f, 40.f}).view({1, 4});
  const at::Tensor d = nn::bbox2dist(at::tensor({2.f, 2.f}).view({1, 2}), big, 15);
  CHECK(d[0][0].item<float>() == Approx(12.0));
  CHECK(d[0][1].item<float>() == Approx(2.0));
  CHECK(d[0][2].item<float>() == Approx(14.99));
  const at::Tensor inside = at::tensor({3.f, 3.f, 5.f, 5.f}).view({1, 4});
  CHECK(nn::bbox2dist(at::tensor({2.f, 2.f}).view({1, 2}), inside, 15)[0][0].item<float>() == 0.f);
}
