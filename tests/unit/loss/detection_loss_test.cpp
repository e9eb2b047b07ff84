#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/detection_loss.hpp"

#include "catch.hpp"

#include <cmath>
#include <vector>

namespace yl = yolotrain::loss;

namespace {

constexpr int64_t kNc = 2;
constexpr int64_t kRegMax = 16;
constexpr int64_t kNo = 4 * kRegMax + kNc;

// Raw head outputs for a 64x64 input: [B, 66, 8, 8], [B, 66, 4, 4], [B, 66, 2, 2].
std::vector<at::Tensor> make_feats(int64_t batch, double scale = 1.0, bool grad = false) {
  std::vector<at::Tensor> feats;
  for (int64_t s : {8, 16, 32}) {
    at::Tensor f = at::randn({batch, kNo, 64 / s, 64 / s}) * scale;
    if (grad) f.requires_grad_();
    feats.push_back(f);
  }
  return feats;
}

yl::Targets make_targets(std::vector<float> idx, std::vector<float> cls, std::vector<float> xywh) {
  const auto n = static_cast<int64_t>(idx.size());
  return {at::tensor(idx), at::tensor(cls).view({n, 1}), at::tensor(xywh).view({n, 4})};
}

yl::Targets no_targets() { return {at::zeros({0}), at::zeros({0, 1}), at::zeros({0, 4})}; }

bool finite(const at::Tensor& t) { return at::isfinite(t).all().item<bool>(); }

yl::DetectionLoss make_loss() { return yl::DetectionLoss(yl::DetectionLossOptions{{8, 16, 32}, kNc, kRegMax}); }

}  // namespace

TEST_CASE("loss without targets has zero box and dfl terms and the hand-computed BCE", "[loss]") {
  const auto loss = make_loss();
  // All logits 0: each of the 84 anchors x 2 classes x 2 images costs ln 2; sum / max(0, 1).
  std::vector<at::Tensor> feats;
  for (int64_t s : {8, 16, 32}) feats.push_back(at::zeros({2, kNo, 64 / s, 64 / s}).requires_grad_());
  const yl::LossOutput out = loss(feats, no_targets());
  REQUIRE(out.items.sizes() == at::IntArrayRef({3}));
  CHECK(out.items[0].item<float>() == 0.f);
  CHECK(out.items[2].item<float>() == 0.f);
  CHECK(out.items[1].item<double>() == Approx(0.5 * 84 * 2 * 2 * std::log(2.0)).epsilon(1e-5));
  CHECK(out.total.item<double>() == Approx(out.items.sum().item<double>() * 2).epsilon(1e-6));
  CHECK_FALSE(out.items.requires_grad());
  out.total.backward();
  for (const auto& f : feats) CHECK(finite(f.grad()));
}

TEST_CASE("loss items and total relate as items sum times batch size", "[loss]") {
  at::manual_seed(1);
  const auto loss = make_loss();
  auto feats = make_feats(3, 1.0, true);
  const auto t = make_targets({0, 0, 2}, {0, 1, 1},
                              {0.5f, 0.5f, 0.4f, 0.3f, 0.25f, 0.25f, 0.2f, 0.2f, 0.7f, 0.6f, 0.5f, 0.6f});
  const yl::LossOutput out = loss(feats, t);
  CHECK(out.items[0].item<float>() > 0.f);
  CHECK(out.items[1].item<float>() > 0.f);
  CHECK(out.items[2].item<float>() > 0.f);
  CHECK(out.total.item<double>() == Approx(out.items.sum().item<double>() * 3).epsilon(1e-6));
  out.total.backward();
  for (const auto& f : feats) {
    CHECK(finite(f.grad()));
    CHECK(f.grad().abs().sum().item<double>() > 0);
  }
  // The gains scale the items one by one.
  const yl::DetectionLoss doubled(yl::DetectionLossOptions{{8, 16, 32}, kNc, kRegMax},
                                  yl::LossGains{15.0, 1.0, 3.0});
  const at::Tensor items2 = doubled(feats, t).items;
  CHECK(at::allclose(items2, out.items * 2, 1e-5, 1e-6));
}

TEST_CASE("loss decreases under a few SGD steps on a fixed batch", "[loss]") {
  at::manual_seed(2);
  const auto loss = make_loss();
  auto feats = make_feats(2, 0.1, true);
  const auto t = make_targets({0, 1, 1}, {1, 0, 1},
                              {0.5f, 0.5f, 0.5f, 0.5f, 0.3f, 0.3f, 0.3f, 0.2f, 0.7f, 0.7f, 0.25f, 0.3f});
  std::vector<double> totals;
  for (int step = 0; step < 10; ++step) {
    const yl::LossOutput out = loss(feats, t);
    totals.push_back(out.total.item<double>());
    for (auto& f : feats) f.mutable_grad() = at::Tensor();
    out.total.backward();
    at::NoGradGuard no_grad;
    for (auto& f : feats) f.sub_(f.grad() * 0.3);
  }
  INFO("first " << totals.front() << " last " << totals.back());
  CHECK(totals.back() < 0.7 * totals.front());
  for (size_t i = 1; i < totals.size(); ++i) CHECK(totals[i] < totals[i - 1]);
}

TEST_CASE("loss stays finite for empty images tiny border and duplicate boxes", "[loss]") {
  at::manual_seed(3);
  const auto loss = make_loss();
  auto feats = make_feats(4, 3.0, true);
  // Image 0: a box smaller than a cell, a box touching the top-left border, a full-image box.
  // Image 1: none. Image 2: the same box twice. Image 3: a zero-size box.
  const auto t = make_targets({0, 0, 0, 2, 2, 3}, {0, 1, 0, 1, 1, 0},
                              {0.51f, 0.51f, 0.01f, 0.01f,  //
                               0.05f, 0.05f, 0.1f, 0.1f,    //
                               0.5f, 0.5f, 1.0f, 1.0f,      //
                               0.3f, 0.6f, 0.2f, 0.3f,      //
                               0.3f, 0.6f, 0.2f, 0.3f,      //
                               0.5f, 0.5f, 0.f, 0.f});
  const yl::LossOutput out = loss(feats, t);
  CHECK(finite(out.items));
  CHECK(finite(out.total));
  out.total.backward();
  for (const auto& f : feats) CHECK(finite(f.grad()));
}

TEST_CASE("loss preprocess pads images and keeps row order", "[loss]") {
  const auto loss = make_loss();
  const auto t = make_targets({1, 0, 1}, {1, 0, 0},
                              {0.5f, 0.5f, 0.5f, 0.5f, 0.25f, 0.25f, 0.5f, 0.5f, 0.75f, 0.5f, 0.5f, 1.f});
  const at::Tensor out = loss.preprocess(t, 3, at::tensor({64.f, 64.f}));
  REQUIRE(out.sizes() == at::IntArrayRef({3, 2, 5}));
  CHECK(at::equal(out[0][0], at::tensor({0.f, 0.f, 0.f, 32.f, 32.f})));
  CHECK(at::equal(out[0][1], at::zeros({5})));
  CHECK(at::equal(out[1][0], at::tensor({1.f, 16.f, 16.f, 48.f, 48.f})));
  CHECK(at::equal(out[1][1], at::tensor({0.f, 32.f, 0.f, 64.f, 64.f})));
  CHECK(at::equal(out[2], at::zeros({2, 5})));
}

TEST_CASE("df_loss of uniform logits is ln reg_max", "[loss]") {
  const at::Tensor pred = at::zeros({8, kRegMax});  // 2 anchors x 4 sides
  const at::Tensor target = at::tensor({0.f, 3.5f, 14.99f, 20.f, 1.f, 2.25f, 7.f, 0.f}).view({2, 4});
  const at::Tensor d = yl::df_loss(pred, target, kRegMax);
  REQUIRE(d.sizes() == at::IntArrayRef({2, 1}));
  CHECK(d[0][0].item<double>() == Approx(std::log(16.0)).epsilon(1e-6));
  CHECK(d[1][0].item<double>() == Approx(std::log(16.0)).epsilon(1e-6));
  // A peaked distribution at bin 3 is cheaper for target 3 than for target 10.
  at::Tensor peaked = at::zeros({4, kRegMax});
  peaked.select(1, 3).fill_(10.f);
  const double near = yl::df_loss(peaked, at::full({1, 4}, 3.f), kRegMax).item<double>();
  const double far = yl::df_loss(peaked, at::full({1, 4}, 10.f), kRegMax).item<double>();
  CHECK(near < far);
}

TEST_CASE("loss rejects wrong shapes and out-of-range targets", "[loss]") {
  const auto loss = make_loss();
  auto feats = make_feats(2);
  CHECK_THROWS_AS(loss({feats[0], feats[1]}, no_targets()), yolotrain::Error);
  CHECK_THROWS_AS(loss({feats[0], feats[1], at::zeros({2, 10, 2, 2})}, no_targets()), yolotrain::Error);
  CHECK_THROWS_AS(loss(feats, make_targets({2}, {0}, {0.5f, 0.5f, 0.1f, 0.1f})), yolotrain::Error);
  CHECK_THROWS_AS(loss(feats, make_targets({0}, {2}, {0.5f, 0.5f, 0.1f, 0.1f})), yolotrain::Error);
  CHECK_THROWS_AS(loss({at::zeros({0, kNo, 8, 8}), at::zeros({0, kNo, 4, 4}), at::zeros({0, kNo, 2, 2})},
                       no_targets()),
                  yolotrain::Error);
  CHECK_THROWS_AS(yl::DetectionLoss(yl::DetectionLossOptions{{}, 2, 16}), yolotrain::Error);
  CHECK_THROWS_AS(yl::DetectionLoss(yl::DetectionLossOptions{{8}, 0, 16}), yolotrain::Error);
}

namespace {

// The batch fields' boxes per image, padded as data::Batch::targets: [B, rows, 5].
at::Tensor padded_of(const yl::Targets& t, int64_t batch, int64_t rows) {
  at::Tensor out = at::zeros({batch, rows, 5});
  std::vector<int64_t> next(static_cast<std::size_t>(batch), 0);
  for (int64_t k = 0; k < t.batch_idx.size(0); ++k) {
    const int64_t i = t.batch_idx[k].item<int64_t>();
    out[i][next[static_cast<std::size_t>(i)]++].copy_(at::cat({t.cls[k], t.bboxes[k]}));
  }
  return out;
}

}  // namespace

TEST_CASE("the device step's dense terms equal the positives' terms and their gradients", "[loss][device-step]") {
  const int64_t reg_max = GENERATE(int64_t{16}, int64_t{1});  // DFL (v8, 11), L1 (YOLO26)
  CAPTURE(reg_max);
  at::manual_seed(3);
  const int64_t no = 4 * reg_max + kNc;
  std::vector<at::Tensor> a, b;
  for (int64_t s : {8, 16, 32}) {
    a.push_back((at::randn({3, no, 64 / s, 64 / s}) * 0.5).requires_grad_());
    b.push_back(a.back().detach().clone().requires_grad_());
  }
  yl::Targets t = make_targets({0, 0, 0, 2}, {1, 0, 1, 1},
                               {0.5f, 0.5f, 0.4f, 0.3f, 0.2f, 0.25f, 0.3f, 0.3f, 0.75f, 0.7f, 0.2f, 0.5f, 0.4f, 0.6f,
                                0.5f, 0.5f});
  yl::DetectionLossOptions options{{8, 16, 32}, kNc, reg_max};
  options.stal = true;
  const yl::LossOutput positives = yl::DetectionLoss(options)(a, t);
  options.device_step = true;
  t.padded = padded_of(t, 3, 8);  // image 1 has no box; rows of zeros pad the others
  const yl::LossOutput dense = yl::DetectionLoss(options)(b, t);
  CHECK(at::allclose(dense.items, positives.items, 1e-5, 1e-6));
  positives.total.backward();
  dense.total.backward();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(at::allclose(b[i].grad(), a[i].grad(), 1e-4, 1e-6));
  // No boxes at all: the same as the positives' path (BCE against zeros, no box terms).
  const yl::Targets none{at::zeros({0}), at::zeros({0, 1}), at::zeros({0, 4}), at::zeros({3, 8, 5})};
  options.device_step = false;
  const at::Tensor empty_positives = yl::DetectionLoss(options)(a, none).items;
  options.device_step = true;
  CHECK(at::allclose(yl::DetectionLoss(options)(b, none).items, empty_positives, 1e-5, 1e-6));
}

TEST_CASE("padded targets must be [B, M, 5]", "[loss][device-step]") {
  yl::DetectionLossOptions options{{8, 16, 32}, kNc, kRegMax};
  options.device_step = true;
  yl::Targets t = no_targets();
  t.padded = at::zeros({2, 8, 4});
  CHECK_THROWS_WITH(yl::DetectionLoss(options)(make_feats(2), t), Catch::Contains("targets.padded has shape"));
}
