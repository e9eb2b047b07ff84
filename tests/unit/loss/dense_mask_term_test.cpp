// The segmentation loss's device step (the static shapes CUDA runs): its mask and semantic terms
// equal the positives' path, items and gradients, with an image without boxes in the batch, with
// overlap and one-per-box masks, and with no boxes at all.
#include <ATen/ATen.h>

#include "yolotrain/loss/segmentation_loss.hpp"

#include "catch.hpp"

#include <vector>

namespace yl = yolotrain::loss;

namespace dense_mask_test {

constexpr int64_t kNc = 2, kNm = 4, kBatch = 3;

struct Inputs {
  yl::SegmentationOutputs out;
  std::vector<at::Tensor> leaves;  // what the gradients are compared on
};

// A YOLO26-seg-like head on a 64 x 64 input (reg_max 16 here), prototypes 16 x 16, semantic logits.
Inputs make_outputs(bool semantic) {
  at::manual_seed(5);
  Inputs in;
  for (int64_t s : {8, 16, 32}) in.out.feats.push_back((at::randn({kBatch, 64 + kNc, 64 / s, 64 / s}) * 0.5));
  in.out.mask_coefficients = at::randn({kBatch, kNm, 84});
  in.out.proto = at::randn({kBatch, kNm, 16, 16});
  if (semantic) in.out.semantic = at::randn({kBatch, kNc, 8, 8});
  for (at::Tensor* t : {&in.out.mask_coefficients, &in.out.proto, &in.out.semantic}) {
    if (t->defined()) in.leaves.push_back(t->requires_grad_());
  }
  for (at::Tensor& f : in.out.feats) in.leaves.push_back(f.requires_grad_());
  return in;
}

Inputs copy_of(const Inputs& a) {
  Inputs b = a;
  b.leaves.clear();
  for (at::Tensor* t : {&b.out.mask_coefficients, &b.out.proto, &b.out.semantic}) {
    if (t->defined()) b.leaves.push_back(*t = t->detach().clone().requires_grad_());
  }
  for (at::Tensor& f : b.out.feats) b.leaves.push_back(f = f.detach().clone().requires_grad_());
  return b;
}

// Boxes (normalized xywh) of images 0 and 2; image 1 has none. Masks at 16 x 16: each box's
// rectangle, the later box on top (overlap: 1-based index per pixel), and the class per pixel.
struct Batch {
  yl::Targets targets;
  yl::MaskTargets masks;
};

Batch make_batch(bool overlap) {
  const std::vector<float> image = {0, 0, 2}, cls = {1, 0, 1};
  const std::vector<float> xywh = {0.5f, 0.5f, 0.5f, 0.4f, 0.25f, 0.3f, 0.3f, 0.3f, 0.6f, 0.55f, 0.5f, 0.6f};
  Batch b;
  b.targets = {at::tensor(image), at::tensor(cls).view({3, 1}), at::tensor(xywh).view({3, 4}),
               at::zeros({kBatch, 8, 5})};
  at::Tensor index = at::zeros({kBatch, 16, 16}), each = at::zeros({3, 16, 16}), sem = at::zeros({kBatch, 16, 16});
  std::vector<int64_t> slot(kBatch, 0);
  for (int64_t k = 0; k < 3; ++k) {
    const auto i = static_cast<int64_t>(image[k]);
    const float* v = &xywh[static_cast<std::size_t>(4 * k)];
    const auto x1 = static_cast<int64_t>((v[0] - v[2] / 2) * 16), x2 = static_cast<int64_t>((v[0] + v[2] / 2) * 16);
    const auto y1 = static_cast<int64_t>((v[1] - v[3] / 2) * 16), y2 = static_cast<int64_t>((v[1] + v[3] / 2) * 16);
    index[i].slice(0, y1, y2).slice(1, x1, x2).fill_(static_cast<double>(++slot[static_cast<std::size_t>(i)]));
    each[k].slice(0, y1, y2).slice(1, x1, x2).fill_(1);
    sem[i].slice(0, y1, y2).slice(1, x1, x2).fill_(cls[static_cast<std::size_t>(k)]);
    b.targets.padded[i][slot[static_cast<std::size_t>(i)] - 1].copy_(
        at::cat({at::tensor({cls[k]}), at::tensor(xywh).view({3, 4})[k]}));
  }
  b.masks = {overlap ? index : each, sem};
  return b;
}

yl::SegmentationLoss make_loss(bool device_step, bool overlap) {
  yl::DetectionLossOptions options{{8, 16, 32}, kNc, 16};
  options.stal = true;
  options.device_step = device_step;
  return yl::SegmentationLoss(options, {}, overlap);
}

}  // namespace dense_mask_test

namespace dm = dense_mask_test;

TEST_CASE("the segmentation loss's device step equals the positives' path, items and gradients",
          "[loss][segment][device-step]") {
  const bool overlap = GENERATE(true, false);
  const bool semantic = GENERATE(false, true);  // YOLO26-seg's semantic term
  CAPTURE(overlap, semantic);
  const dm::Inputs a = dm::make_outputs(semantic), b = dm::copy_of(a);
  const dm::Batch batch = dm::make_batch(overlap);
  const yl::LossOutput positives = dm::make_loss(false, overlap)(a.out, batch.targets, batch.masks);
  const yl::LossOutput dense = dm::make_loss(true, overlap)(b.out, batch.targets, batch.masks);
  INFO("positives " << positives.items << " dense " << dense.items);
  REQUIRE(positives.items[1].item<double>() > 0);  // the mask term is there
  CHECK(at::allclose(dense.items, positives.items, 1e-5, 1e-6));
  positives.total.backward();
  dense.total.backward();
  for (std::size_t i = 0; i < a.leaves.size(); ++i) {
    INFO("leaf " << i);
    CHECK(at::allclose(b.leaves[i].grad(), a.leaves[i].grad(), 1e-4, 1e-6));
  }
}

TEST_CASE("the segmentation loss's device step without any box: mask and semantic terms 0, gradients finite",
          "[loss][segment][device-step]") {
  const bool overlap = GENERATE(true, false);
  CAPTURE(overlap);
  const dm::Inputs in = dm::make_outputs(true);
  yl::Targets none{at::zeros({0}), at::zeros({0, 1}), at::zeros({0, 4}), at::zeros({dm::kBatch, 8, 5})};
  const yl::MaskTargets masks{overlap ? at::zeros({dm::kBatch, 16, 16}) : at::zeros({0, 16, 16}),
                              at::zeros({dm::kBatch, 16, 16})};
  const yl::LossOutput positives = dm::make_loss(false, overlap)(in.out, none, masks);
  const yl::LossOutput dense = dm::make_loss(true, overlap)(in.out, none, masks);
  CHECK(dense.items[1].item<double>() == 0);
  CHECK(dense.items[4].item<double>() == 0);
  CHECK(at::allclose(dense.items, positives.items, 1e-5, 1e-6));
  dense.total.backward();
  for (const at::Tensor& leaf : in.leaves) CHECK(at::isfinite(leaf.grad()).all().item<bool>());
}
