#include <ATen/ATen.h>

#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/detection_model.hpp"

#include "catch.hpp"

#include <cmath>

TEST_CASE("DetectionLoss built from a model takes its head's strides nc and reg_max", "[loss]") {
  yolotrain::nn::DetectionModel model(yolotrain::nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  const yolotrain::loss::DetectionLoss loss(model);
  CHECK(loss.options().strides == std::vector<double>{8.0, 16.0, 32.0});
  CHECK(loss.options().nc == 3);
  CHECK(loss.options().reg_max == 16);
  CHECK(loss.options().tal_topk == 10);
  CHECK(loss.gains().box == 7.5);
  const auto feats = model->forward(at::zeros({1, 3, 64, 64}));
  yolotrain::loss::Targets targets;
  targets.batch_idx = at::zeros({1});
  targets.cls = at::zeros({1, 1});
  targets.bboxes = at::tensor({0.5f, 0.5f, 0.25f, 0.25f}).view({1, 4});
  const yolotrain::loss::LossOutput out = loss(feats, targets);
  CHECK(std::isfinite(out.total.template item<double>()));
}
