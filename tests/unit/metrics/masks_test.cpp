// Segmentation in validation: NMS carrying the mask coefficients, process_mask, mask_iou, the
// label masks, and the validator's mask matches (Ultralytics 8.4.117's SegmentationValidator).
#include <ATen/ATen.h>

#include "yolotrain/metrics/masks.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/metrics/validator.hpp"

#include "catch.hpp"

namespace ym = yolotrain::metrics;

TEST_CASE("NMS with nc carries each kept row's extra columns after its class", "[metrics][segment]") {
  // Two classes, three anchors, two extras: [1, 4 + 2 + 2, 3] (xywh, scores, coefficients).
  const at::Tensor pred = at::tensor({50.f, 52.f, 200.f,                                  // x
                                      50.f, 50.f, 200.f,                                  // y
                                      20.f, 20.f, 30.f,                                   // w
                                      20.f, 20.f, 30.f,                                   // h
                                      0.9f, 0.8f, 0.1f,                                   // class 0
                                      0.0f, 0.0f, 0.7f,                                   // class 1
                                      1.f, 2.f, 3.f,                                      // extra 0
                                      -1.f, -2.f, -3.f})                                  // extra 1
                             .view({1, 8, 3});
  ym::NmsOptions o;
  o.conf = 0.5, o.iou = 0.5, o.nc = 2;
  const auto out = ym::non_max_suppression(pred, o);
  REQUIRE(out[0].sizes() == at::IntArrayRef({2, 8}));  // anchor 1 suppressed by anchor 0
  CHECK(out[0][0][6].item<float>() == 1.f);
  CHECK(out[0][0][7].item<float>() == -1.f);
  CHECK(out[0][1][5].item<float>() == 1.f);  // class 1, its extras follow
  CHECK(out[0][1][6].item<float>() == 3.f);
  o.multi_label = true;
  CHECK(ym::non_max_suppression(pred, o)[0].size(1) == 8);
  o.conf = 0.95;
  CHECK(ym::non_max_suppression(pred, o)[0].sizes() == at::IntArrayRef({0, 8}));
}

TEST_CASE("process_mask keeps each detection's positive prototype pixels inside its box", "[metrics][segment]") {
  // Two prototypes 8x8 for a 32x32 input (a quarter): the first all +1, the second all -1.
  const at::Tensor protos = at::stack({at::ones({8, 8}), -at::ones({8, 8})});
  const at::Tensor coefficients = at::tensor({1.f, 0.f, 0.f, 1.f}).view({2, 2});
  const at::Tensor boxes = at::tensor({4.f, 8.f, 16.f, 24.f, 0.f, 0.f, 32.f, 32.f}).view({2, 4});
  const at::Tensor m = ym::process_mask(protos, coefficients, boxes, {32, 32});
  REQUIRE(m.sizes() == at::IntArrayRef({2, 8, 8}));
  CHECK(m.scalar_type() == at::kByte);
  CHECK(m[0].sum().item<int64_t>() == 3 * 4);  // columns 1..3, rows 2..5 in prototype pixels
  CHECK(m[0][2][1].item<int>() == 1);
  CHECK(m[0][6][1].item<int>() == 0);
  CHECK(m[1].sum().item<int64_t>() == 0);  // negative logits everywhere
  CHECK(ym::process_mask(protos, at::zeros({0, 2}), at::zeros({0, 4}), {32, 32}).sizes() ==
        at::IntArrayRef({0, 8, 8}));
}

TEST_CASE("mask IoU, label masks from an index mask, and the validator's mask metrics", "[metrics][segment]") {
  const at::Tensor a = at::tensor({1.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 1.f}).view({2, 4});
  const at::Tensor b = at::tensor({1.f, 0.f, 0.f, 0.f}).view({1, 4});
  const at::Tensor iou = ym::mask_iou(a, b);
  CHECK(iou[0][0].item<double>() == Approx(0.5).margin(1e-6));
  CHECK(iou[1][0].item<double>() == 0.0);
  at::Tensor index = at::zeros({8, 8});
  index.slice(0, 0, 4).fill_(1);
  index.slice(0, 4, 8).slice(1, 0, 2).fill_(2);
  const at::Tensor labels = ym::label_masks(index, 2, true, {8, 8});
  CHECK(labels.sizes() == at::IntArrayRef({2, 8, 8}));
  CHECK(labels[0].sum().item<int64_t>() == 32);
  CHECK(labels[1].sum().item<int64_t>() == 8);
  CHECK(ym::label_masks(index, 2, true, {4, 4}).sizes() == at::IntArrayRef({2, 4, 4}));  // resized, 0/1

  // One image, two labels, both boxes predicted exactly; the first mask too, the second's covers
  // 16 more pixels than its label (mask IoU 8 / 24): the masks match only the first.
  ym::Validator v(2, ym::UltralyticsRules::V84);
  const at::Tensor gt_cls = at::tensor({0.f, 1.f});
  const at::Tensor gt_boxes = at::tensor({0.5f, 0.25f, 1.f, 0.5f, 0.125f, 0.75f, 0.25f, 0.5f}).view({2, 4});
  const at::Tensor pred = at::tensor({0.f, 0.f, 8.f, 4.f, 0.9f, 0.f, 0.f, 4.f, 2.f, 8.f, 0.8f, 1.f}).view({2, 6});
  at::Tensor pred_masks = labels.clone();
  pred_masks[1].slice(0, 4, 8).slice(1, 2, 6).fill_(1);  // 24 pixels, 8 of them the label's
  v.update(pred, gt_cls, gt_boxes, {8, 8}, ym::ImageInfo{{8, 8}, std::nullopt}, pred_masks, labels);
  CHECK(v.tp()[1].all().item<bool>());            // the box matches at every threshold
  CHECK_FALSE(v.tp_masks()[1].any().item<bool>());
  CHECK(v.tp_masks()[0].all().item<bool>());
  const ym::DetMetrics box = v.finalize(), mask = v.finalize_masks();
  CHECK(box.map50 == Approx(0.995));
  CHECK(mask.map50 < box.map50);
}
