#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/nn/anchors.hpp"
#include "yolotrain/loss/task_aligned_assigner.hpp"

#include "catch.hpp"

#include <vector>

namespace yl = yolotrain::loss;

namespace {

// A 4x4 grid of stride-8 cells (32x32 px image): anchor a = 4*row + col, centre
// (8*col + 4, 8*row + 4). Each anchor predicts a 16x16 box around its centre with score 0.5.
struct Scene {
  at::Tensor anchors;    // [16, 2] pixels
  at::Tensor pd_bboxes;  // [1, 16, 4] pixels
  at::Tensor pd_scores;  // [1, 16, nc]

  explicit Scene(int64_t nc = 2) {
    anchors = yolotrain::nn::make_anchors({at::zeros({1, 1, 4, 4})}, {8.0}).first * 8;
    pd_bboxes = at::cat({anchors - 8, anchors + 8}, 1).unsqueeze(0);
    pd_scores = at::full({1, 16, nc}, 0.5f);
  }
  void set_box(int64_t a, std::vector<float> xyxy) { pd_bboxes[0][a].copy_(at::tensor(xyxy)); }
  // Shrinks every predicted box to 1x1 px, so that it overlaps nothing much.
  void tiny_boxes() { pd_bboxes = at::cat({anchors - 0.5, anchors + 0.5}, 1).unsqueeze(0); }

  yl::Assignment assign(const std::vector<std::vector<float>>& gts, const std::vector<float>& cls,
                        int64_t topk = 10, std::vector<float> mask = {}) const {
    const auto m = static_cast<int64_t>(gts.size());
    std::vector<float> flat;
    for (const auto& g : gts) flat.insert(flat.end(), g.begin(), g.end());
    if (mask.empty()) mask.assign(gts.size(), 1.f);
    const at::Tensor gt_bboxes = at::tensor(flat).view({1, m, 4});
    const at::Tensor gt_labels = at::tensor(cls).view({1, m, 1});
    const at::Tensor mask_gt = at::tensor(mask).view({1, m, 1});
    const yl::TaskAlignedAssigner assigner(topk, pd_scores.size(2), 0.5, 6.0);
    return assigner(pd_scores, pd_bboxes, anchors, gt_labels, gt_bboxes, mask_gt);
  }
};

std::vector<int64_t> positives(const yl::Assignment& a) {
  const at::Tensor idx = a.fg_mask[0].nonzero().view(-1).contiguous();
  return std::vector<int64_t>(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + idx.numel());
}

int64_t gt_of(const yl::Assignment& a, int64_t anchor) {
  return a.target_gt_idx[0][anchor].item<int64_t>();
}

// A random scene over `anchors` (pixels): B images of predictions around every anchor, up to M
// boxes of nc classes per image, each kept with probability `keep` (padded rows are zeros, as the
// loss's preprocess makes them).
struct RandomScene {
  at::Tensor pd_scores, pd_bboxes, gt_labels, gt_bboxes, mask_gt;
  RandomScene(const at::Tensor& anchors, int64_t B, int64_t M, int64_t nc, double keep) {
    const int64_t A = anchors.size(0);
    const at::Tensor wh_pred = at::rand({B, A, 2}) * 60 + 4;
    const at::Tensor centre = anchors.unsqueeze(0) + (at::rand({B, A, 2}) - 0.5) * 8;
    pd_bboxes = at::cat({centre - wh_pred / 2, centre + wh_pred / 2}, 2);
    pd_scores = at::rand({B, A, nc});
    const at::Tensor wh = at::rand({B, M, 2}) * 68 + 2;  // some below the smallest stride
    const at::Tensor xy = at::rand({B, M, 2}) * (128 - wh);
    gt_bboxes = at::cat({xy, xy + wh}, 2);
    gt_labels = at::randint(0, nc, {B, M, 1}).to(at::kFloat);
    mask_gt = (at::rand({B, M, 1}) < keep).to(at::kFloat);
    gt_bboxes = gt_bboxes * mask_gt;
  }
};

}  // namespace

TEST_CASE("assigner gives an anchor inside two boxes to the higher-IoU box", "[loss]") {
  Scene s;
  // Anchor 5 (centre 12,12) lies inside A = (0,0,16,16) and B = (8,8,32,32); its box overlaps B
  // far more (CIoU ~0.69 vs ~0.06).
  s.set_box(5, {10, 10, 30, 30});
  const auto a = s.assign({{0, 0, 16, 16}, {8, 8, 32, 32}}, {0, 1});
  REQUIRE(a.fg_mask[0][5].item<bool>());
  CHECK(gt_of(a, 5) == 1);
  CHECK(a.target_labels[0][5].item<int64_t>() == 1);
  CHECK(at::equal(a.target_bboxes[0][5], at::tensor({8.f, 8.f, 32.f, 32.f})));
  CHECK(a.target_scores[0][5][0].item<float>() == 0.f);
  CHECK(a.target_scores[0][5][1].item<float>() > 0.f);
  // A keeps its other three anchors 0, 1, 4.
  for (int64_t k : {0, 1, 4}) {
    CHECK(a.fg_mask[0][k].item<bool>());
    CHECK(gt_of(a, k) == 0);
  }
  CHECK_FALSE(a.fg_mask[0][3].item<bool>());  // centre (28, 4) is in neither box
}

TEST_CASE("assigner breaks an exact IoU tie toward the first box", "[loss]") {
  Scene s;
  // Anchor 5's box (4,4,20,20) is placed symmetrically between A = (0,0,16,16) and
  // B = (8,8,24,24): identical CIoU in float32.
  s.set_box(5, {4, 4, 20, 20});
  const auto a = s.assign({{0, 0, 16, 16}, {8, 8, 24, 24}}, {0, 1});
  REQUIRE(a.fg_mask[0][5].item<bool>());
  CHECK(gt_of(a, 5) == 0);
  const auto b = s.assign({{8, 8, 24, 24}, {0, 0, 16, 16}}, {1, 0});
  CHECK(gt_of(b, 5) == 0);
  CHECK(b.target_labels[0][5].item<int64_t>() == 1);
}

TEST_CASE("assigner resolves a shared anchor over every box that contains it", "[loss]") {
  // topk 1: A = (0,0,16,16) and C = (4,4,16,16) both pick anchor 5; B = (8,8,24,24) picks
  // anchor 10 (a perfect box) but also contains anchor 5 and overlaps it best, so anchor 5 goes to
  // B although B did not select it (the reference's argmax over all containing boxes).
  Scene s;
  s.tiny_boxes();
  s.set_box(5, {8, 8, 22, 22});
  s.set_box(10, {8, 8, 24, 24});
  const auto a = s.assign({{0, 0, 16, 16}, {8, 8, 24, 24}, {4, 4, 16, 16}}, {0, 1, 0}, 1);
  CHECK(positives(a) == std::vector<int64_t>({5, 10}));
  CHECK(gt_of(a, 5) == 1);
  CHECK(gt_of(a, 10) == 1);
}

TEST_CASE("assigner gives no positives to a box smaller than a cell", "[loss]") {
  Scene s;
  // (13,13,15,15) contains no anchor centre (they sit at 4, 12, 20, 28).
  const auto a = s.assign({{13, 13, 15, 15}}, {1});
  CHECK(positives(a).empty());
  CHECK(a.target_scores.sum().item<float>() == 0.f);
  // A box whose edge passes exactly through a centre does not contain it (strict > eps).
  const auto b = s.assign({{4, 4, 13, 13}}, {0});
  CHECK(positives(b) == std::vector<int64_t>({5}));
}

TEST_CASE("assigner never matches padded boxes", "[loss]") {
  Scene s;
  // Row 1 is zero padding, row 2 a real-looking box whose mask is 0: neither may take anchors.
  const auto a =
      s.assign({{0, 0, 16, 16}, {0, 0, 0, 0}, {0, 0, 32, 32}}, {0, 0, 1}, 10, {1.f, 0.f, 0.f});
  CHECK(positives(a) == std::vector<int64_t>({0, 1, 4, 5}));
  for (int64_t k : positives(a)) CHECK(gt_of(a, k) == 0);
  CHECK(a.target_scores.select(2, 1).sum().item<float>() == 0.f);
  // All boxes padded: nothing at all.
  const auto none = s.assign({{0, 0, 0, 0}}, {0}, 10, {0.f});
  CHECK(positives(none).empty());
}

TEST_CASE("assigner keeps at most topk anchors per box and normalizes target scores", "[loss]") {
  Scene s;
  // Every anchor predicts the GT exactly; scores rise with the anchor index, so the top 3 by
  // metric are 13, 14, 15.
  s.pd_bboxes = at::tensor({0.f, 0.f, 32.f, 32.f}).repeat({1, 16, 1});
  s.pd_scores = (at::arange(16, at::kFloat) * 0.05 + 0.1).view({1, 16, 1}).repeat({1, 1, 2});
  const auto a = s.assign({{0, 0, 32, 32}}, {1}, 3);
  CHECK(positives(a) == std::vector<int64_t>({13, 14, 15}));
  // Best anchor: metric normalized to the GT's best IoU (1); others by sqrt(score ratio).
  CHECK(a.target_scores[0][15][1].item<float>() == Approx(1.0).epsilon(1e-5));
  CHECK(a.target_scores[0][13][1].item<float>() ==
        Approx(std::sqrt((0.1 + 13 * 0.05) / (0.1 + 15 * 0.05))).epsilon(1e-5));
  CHECK(a.target_scores.select(2, 0).sum().item<float>() == 0.f);
}

TEST_CASE("assigner handles a batch without boxes", "[loss]") {
  Scene s;
  const yl::TaskAlignedAssigner assigner(10, 2, 0.5, 6.0);
  const auto a = assigner(s.pd_scores, s.pd_bboxes, s.anchors, at::zeros({1, 0, 1}),
                          at::zeros({1, 0, 4}), at::zeros({1, 0, 1}));
  CHECK(a.fg_mask.sum().item<double>() == 0);
  CHECK(a.target_scores.sum().item<double>() == 0);
  CHECK(a.target_labels[0][0].item<double>() == 2);  // background index
  CHECK_THROWS_AS(assigner(s.pd_scores, s.pd_bboxes, s.anchors.slice(0, 0, 3), at::zeros({1, 0, 1}),
                           at::zeros({1, 0, 4}), at::zeros({1, 0, 1})),
                  yolotrain::Error);
}

// The pair-wise assignment (CPU float) against the reference's dense tensors, on random scenes
// of three levels (128 px: 336 anchors), 1-12 boxes of 4-70 px per image with padding, random
// scores and predicted boxes near each anchor. They must agree wherever it matters to the loss:
// the target scores everywhere, and the GT, box and label of every anchor with a target score
// above 0. An anchor positive in one and not the other may only be one of metric 0 (header).
// Each of Ultralytics 8.2's assigner, 8.4's (STAL) and 8.4's one-to-one (topk 7, topk2 1, STAL).
TEST_CASE("the sparse assigner gives the dense reference's targets", "[loss]") {
  struct Variant {
    int64_t topk, topk2;
    bool stal;
  };
  const auto variant = GENERATE(Variant{10, 0, false}, Variant{10, 0, true}, Variant{7, 1, true});
  CAPTURE(variant.topk, variant.topk2, variant.stal);
  at::manual_seed(7);
  const std::vector<at::Tensor> levels{at::zeros({1, 1, 16, 16}), at::zeros({1, 1, 8, 8}), at::zeros({1, 1, 4, 4})};
  const auto [points, strides] = yolotrain::nn::make_anchors(levels, {8.0, 16.0, 32.0});
  const at::Tensor anchors = points * strides;  // pixels
  const int64_t B = 3, M = 12, nc = 5;
  int64_t positives_seen = 0;
  for (int scene = 0; scene < 20; ++scene) {
    CAPTURE(scene);
    RandomScene r(anchors, B, M, nc, 0.8);
    const at::Tensor &pd_scores = r.pd_scores, &pd_bboxes = r.pd_bboxes, &gt_labels = r.gt_labels,
                     &gt_bboxes = r.gt_bboxes, &mask_gt = r.mask_gt;
    if (scene == 0) gt_bboxes[0][1].copy_(gt_bboxes[0][0]);  // a duplicate box: every anchor claimed twice
    yl::TaskAlignedAssigner assigner(variant.topk, nc, 0.5, 6.0);
    assigner.with_topk2(variant.topk2);
    if (variant.stal) assigner.with_stal({8.0, 16.0, 32.0});
    const yl::Assignment d = assigner.dense(pd_scores, pd_bboxes, anchors, gt_labels, gt_bboxes, mask_gt);
    const yl::Assignment s = assigner.sparse(pd_scores, pd_bboxes, anchors, gt_labels, gt_bboxes, mask_gt);
    CHECK(at::allclose(s.target_scores, d.target_scores, 1e-5, 1e-7));
    CHECK(at::equal(s.anchor_scores, s.target_scores.sum(-1)));  // one non-zero class per anchor
    CHECK(at::allclose(d.anchor_scores, d.target_scores.sum(-1)));
    const yl::Assignment lean = assigner.sparse(pd_scores, pd_bboxes, anchors, gt_labels, gt_bboxes, mask_gt, false);
    CHECK_FALSE(lean.target_scores.defined());
    CHECK(at::equal(lean.anchor_scores, s.anchor_scores));
    const at::Tensor scored = d.target_scores.sum(-1) > 0;
    positives_seen += scored.sum().item<int64_t>();
    CHECK(at::equal(s.fg_mask.index({scored}), d.fg_mask.index({scored})));
    CHECK(at::equal(s.target_gt_idx.index({scored}), d.target_gt_idx.index({scored})));
    CHECK(at::equal(s.target_labels.index({scored}), d.target_labels.index({scored})));
    CHECK(at::equal(s.target_bboxes.index({scored}), d.target_bboxes.index({scored})));
    const at::Tensor differs = s.fg_mask != d.fg_mask;
    CHECK(s.target_scores.sum(-1).index({differs}).abs().sum().item<float>() == 0.f);
    CHECK(d.target_scores.sum(-1).index({differs}).abs().sum().item<float>() == 0.f);
  }
  CHECK(positives_seen > (variant.topk2 ? 150 : 500));
}

TEST_CASE("8.4's STAL gives anchors to a box smaller than the smallest stride", "[loss]") {
  Scene s;
  s.pd_bboxes = at::tensor({13.f, 13.f, 15.f, 15.f}).repeat({1, 16, 1});  // every anchor predicts the box
  const at::Tensor gt_bboxes = at::tensor({13.f, 13.f, 15.f, 15.f}).view({1, 1, 4});
  const at::Tensor gt_labels = at::ones({1, 1, 1}), mask_gt = at::ones({1, 1, 1});
  yl::TaskAlignedAssigner assigner(10, 2, 0.5, 6.0);
  // Without STAL the 2x2 px box holds no anchor centre; with it, it counts as 16x16 around
  // (14, 14) for choosing candidates: the four centres at 12 and 20 px (the targets stay 2x2).
  CHECK(positives(assigner(s.pd_scores, s.pd_bboxes, s.anchors, gt_labels, gt_bboxes, mask_gt)).empty());
  assigner.with_stal({8.0, 16.0});
  for (const bool sparse : {false, true}) {
    const auto a = sparse ? assigner.sparse(s.pd_scores, s.pd_bboxes, s.anchors, gt_labels, gt_bboxes, mask_gt)
                          : assigner.dense(s.pd_scores, s.pd_bboxes, s.anchors, gt_labels, gt_bboxes, mask_gt);
    CHECK(positives(a) == std::vector<int64_t>({5, 6, 9, 10}));
    CHECK(at::equal(a.target_bboxes[0][5], gt_bboxes[0][0]));
  }
  // A padded row is never widened into a candidate.
  CHECK(positives(assigner(s.pd_scores, s.pd_bboxes, s.anchors, gt_labels, gt_bboxes, at::zeros({1, 1, 1}))).empty());
}

TEST_CASE("8.4's topk2 keeps each box's best positive only", "[loss]") {
  Scene s;
  s.pd_bboxes = at::tensor({0.f, 0.f, 32.f, 32.f}).repeat({1, 16, 1});
  s.pd_scores = (at::arange(16, at::kFloat) * 0.05 + 0.1).view({1, 16, 1}).repeat({1, 1, 2});
  const at::Tensor gt_bboxes = at::tensor({0.f, 0.f, 32.f, 32.f}).view({1, 1, 4});
  yl::TaskAlignedAssigner assigner(7, 2, 0.5, 6.0);
  assigner.with_topk2(1);
  CHECK(assigner.topk2() == 1);
  for (const bool sparse : {false, true}) {
    const auto a = sparse ? assigner.sparse(s.pd_scores, s.pd_bboxes, s.anchors, at::ones({1, 1, 1}), gt_bboxes,
                                            at::ones({1, 1, 1}))
                          : assigner.dense(s.pd_scores, s.pd_bboxes, s.anchors, at::ones({1, 1, 1}), gt_bboxes,
                                           at::ones({1, 1, 1}));
    CHECK(positives(a) == std::vector<int64_t>({15}));
    CHECK(a.target_scores[0][15][1].item<float>() == Approx(1.0).epsilon(1e-5));
  }
  CHECK(assigner.with_topk2(7).topk2() == 0);  // topk2 == topk: no second selection
  CHECK_THROWS_AS(assigner.with_topk2(-1), yolotrain::Error);
}

TEST_CASE("the assigner with static shapes gives the masked dense assignment", "[loss][device-step]") {
  const bool stal = GENERATE(false, true);
  const int64_t topk2 = GENERATE(0, 1);
  CAPTURE(stal, topk2);
  at::manual_seed(11);
  const std::vector<at::Tensor> levels{at::zeros({1, 1, 16, 16}), at::zeros({1, 1, 8, 8}), at::zeros({1, 1, 4, 4})};
  const auto [points, strides] = yolotrain::nn::make_anchors(levels, {8.0, 16.0, 32.0});
  const at::Tensor anchors = points * strides;
  const int64_t B = 3, M = 8, nc = 5;
  for (int scene = 0; scene < 10; ++scene) {
    CAPTURE(scene);
    const RandomScene r(anchors, B, M, nc, 0.7);
    yl::TaskAlignedAssigner masked(10, nc, 0.5, 6.0), fixed(10, nc, 0.5, 6.0);
    masked.with_topk2(topk2);
    fixed.with_topk2(topk2).with_static_shapes();
    if (stal) {
      masked.with_stal({8.0, 16.0, 32.0});
      fixed.with_stal({8.0, 16.0, 32.0});
    }
    const yl::Assignment m = masked.dense(r.pd_scores, r.pd_bboxes, anchors, r.gt_labels, r.gt_bboxes, r.mask_gt);
    const yl::Assignment f = fixed.dense(r.pd_scores, r.pd_bboxes, anchors, r.gt_labels, r.gt_bboxes, r.mask_gt);
    CHECK(at::equal(m.fg_mask, f.fg_mask));
    CHECK(at::equal(m.target_gt_idx, f.target_gt_idx));
    CHECK(at::equal(m.target_labels, f.target_labels));
    CHECK(at::equal(m.target_bboxes, f.target_bboxes));
    CHECK(at::allclose(m.target_scores, f.target_scores, 1e-6, 1e-7));
  }
}
