// Classification models against Ultralytics 8.4.117 (issue 54): YOLOv8-cls, YOLO11-cls and YOLO26-cls
// built from their YAMLs (parameter, tensor and layer counts of 8.4.117's ClassificationModel run
// here), their outputs on the same weights (scripts/ultralytics84_cls_outputs.py), and what
// ClassificationModel differs in: no strides, BatchNorm at torch's defaults, no detection head.
#include <ATen/ATen.h>

#include "formula_weights.hpp"
#include "test_support.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::count_parameters;
using yolotrain::test::from_json;

// ClassificationModel(yaml) of 8.4.117 at the YAMLs' nc 1000 (sum of numel() over parameters()).
TEST_CASE("the -cls models of every scale have Ultralytics 8.4's parameter counts", "[nn][classify]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {
      {"yolov8n-cls", 2719288},  {"yolov8s-cls", 6361736},  {"yolov8m-cls", 17053336}, {"yolov8l-cls", 37480744},
      {"yolov8x-cls", 57422840}, {"yolo11n-cls", 2812104},  {"yolo11s-cls", 6724008},  {"yolo11m-cls", 11634216},
      {"yolo11l-cls", 14115624}, {"yolo11x-cls", 29637064}, {"yolo26n-cls", 2812104},  {"yolo26s-cls", 6724008},
      {"yolo26m-cls", 11634216}, {"yolo26l-cls", 14115624}, {"yolo26x-cls", 29637064}};
  for (const auto& [name, params] : counts) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml"));
    CHECK(count_parameters(*model) == params);
    CHECK(model->task() == "classify");
    CHECK(model->nc() == 1000);
  }
}

TEST_CASE("the -cls models' summaries count Ultralytics 8.4's layers", "[nn][classify]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {{"yolov8n-cls", 56}, {"yolo11n-cls", 86}};
  for (const auto& [name, layers] : counts) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml").nc(3));
    CHECK(nn::summarize(*model).layers == layers);
  }
}

TEST_CASE("a classification model has Ultralytics' names, torch's BatchNorm settings and no strides",
          "[nn][classify]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n-cls.yaml").nc(3));
  std::map<std::string, at::Tensor> sd;
  for (const auto& [name, t] : nn::state_dict(*model)) sd[name] = t;
  CHECK(sd.count("model.9.conv.conv.weight") == 1);
  CHECK(sd.at("model.9.linear.weight").sizes() == at::IntArrayRef({3, 1280}));
  CHECK(sd.at("model.9.linear.bias").sizes() == at::IntArrayRef({3}));
  CHECK(sd.rbegin()->first.rfind("model.9.", 0) == 0);  // the head is the last layer
  // ClassificationModel never calls initialize_weights: eps 1e-5, momentum 0.1 (torch's defaults).
  for (const auto& m : model->modules(false)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2dImpl>()) {
      CHECK(bn->options.eps() == 1e-5);
      CHECK(bn->options.momentum().value() == 0.1);
    }
  }
  CHECK(model->strides() == std::vector<double>{1.0});
  CHECK(model->max_stride() == 32);  // the trainer still rounds imgsz to 32, as Ultralytics' gs
  CHECK_THROWS_WITH(model->head(), Catch::Contains("classify model") && Catch::Contains("no detection head"));
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor probs = model->predict(at::rand({2, 3, 50, 70}));  // no stride constraint
  CHECK(probs.sizes() == at::IntArrayRef({2, 3}));
  CHECK(probs.sum(1).sub(1).abs().max().item<double>() < 1e-5);
}


// Ultralytics' own ClassificationModel (8.4.117, run here by scripts/ultralytics84_cls_outputs.py)
// and yolotrain's, both with the formula weights and nc 3: eval mode's probabilities and logits, and
// train mode's logits (BatchNorm on the batch's statistics, which tells the two images apart) agree
// to 1e-4.
TEST_CASE("yolov8n-, yolo11n- and yolo26n-cls give Ultralytics 8.4's outputs on the same weights",
          "[nn][classify]") {
  nlohmann::json ref;
  std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/nn/data/ultralytics84_cls_outputs.json") >> ref;
  at::Tensor x = at::sin(0.11 * at::arange(2 * 3 * 64 * 64, at::kDouble)).abs().to(at::kFloat).view({2, 3, 64, 64});
  x[1] = x[1] * 0.25 + 0.5 * (at::arange(64) < 32).to(at::kFloat);
  for (const std::string yaml : {"yolov8n-cls.yaml", "yolo11n-cls.yaml", "yolo26n-cls.yaml"}) {
    INFO(yaml);
    const nlohmann::json& r = ref.at(yaml);
    nn::DetectionModel model(nn::DetectionModelOptions(yaml).nc(3));
    CHECK(yolotrain::test::set_formula_weights(*model) == r.at("tensors_set").get<int>());
    CHECK(nn::summarize(*model).layers == r.at("layers").get<int>());
    torch::NoGradGuard no_grad;
    model->eval();
    const at::Tensor logits = model->forward_heads(x).logits;
    model->train();
    const at::Tensor train_logits = model->forward_heads(x).logits;
    const std::vector<std::pair<std::string, at::Tensor>> mine = {
        {"probs", nn::ClassifyImpl::probabilities(logits)}, {"logits", logits}, {"train_logits", train_logits}};
    for (const auto& [key, got] : mine) {
      const at::Tensor want = from_json(r.at(key));
      REQUIRE(got.sizes() == want.sizes());
      INFO(key << " max difference " << (got - want).abs().max().item<double>());
      CHECK(yolotrain::test::agrees(got, want));
    }
  }
}

TEST_CASE("a TorchVision or ResNetLayer backbone is refused with the reason", "[nn][classify]") {
  yolotrain::test::TempDir tmp;
  const fs::path yaml = tmp / "resnet-cls.yaml";
  std::ofstream(yaml) << "nc: 10\nbackbone:\n  - [-1, 1, TorchVision, [768, convnext_tiny, DEFAULT, True, 2]]\n"
                         "head:\n  - [-1, 1, Classify, [nc]]\n";
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions(yaml.string())),
                    Catch::Contains("TorchVision builds a torchvision (or ResNet) backbone") &&
                        Catch::Contains("use a YOLO backbone"));
}
