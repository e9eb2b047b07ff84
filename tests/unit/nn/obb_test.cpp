// OBB models against Ultralytics 8.4.117 (issue 55, the model): YOLOv8-obb, YOLO11-obb and YOLO26-obb
// built from their YAMLs (parameter and layer counts of 8.4.117's OBBModel run here) and their
// outputs on the same weights (scripts/ultralytics84_obb_outputs.py): the rotated boxes, scores and
// angle of OBB._inference, YOLO26-obb's end-to-end top-k rows, each branch's angles.
#include <ATen/ATen.h>

#include "formula_weights.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::canonical_rows;
using yolotrain::test::count_parameters;
using yolotrain::test::from_json;

// OBBModel(yaml) of 8.4.117 at the YAMLs' nc 80: sum of numel() over parameters(), and the leaves of
// named_modules() (its summary's layer count) at n.
TEST_CASE("the -obb models of every scale have Ultralytics 8.4's parameter counts", "[nn][obb]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {
      {"yolov8n-obb", 3228867},  {"yolov8s-obb", 11452739}, {"yolov8m-obb", 26463235}, {"yolov8l-obb", 44540355},
      {"yolov8x-obb", 69555651}, {"yolo11n-obb", 2695747},  {"yolo11s-obb", 9744931},  {"yolo11m-obb", 20963523},
      {"yolo11l-obb", 26220995}, {"yolo11x-obb", 58875331}, {"yolo26n-obb", 2715614},  {"yolo26s-obb", 10582142},
      {"yolo26m-obb", 23593918}, {"yolo26l-obb", 27997374}, {"yolo26x-obb", 62811678}};
  for (const auto& [name, params] : counts) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml"));
    CHECK(count_parameters(*model) == params);
    CHECK(model->task() == "obb");
    CHECK(model->head()->options.ne() == 1);
  }
}

TEST_CASE("dist2rbox turns distances along a box's axes and its angle into the rotated box", "[nn][obb]") {
  // A box 4 wide and 2 high whose centre is 1 right of the anchor along its own x axis, turned by
  // 90 degrees: the centre moves up the image's y axis instead; the size stays.
  const at::Tensor dist = at::tensor({1.0f, 1.0f, 3.0f, 1.0f}).view({1, 4});  // left top right bottom
  const at::Tensor angle = at::full({1, 1}, static_cast<float>(M_PI / 2));
  const at::Tensor anchor = at::tensor({10.0f, 20.0f}).view({1, 2});
  const at::Tensor box = nn::dist2rbox(dist, angle, anchor);
  CHECK(box[0][0].item<float>() == Approx(10.0f).margin(1e-5));
  CHECK(box[0][1].item<float>() == Approx(21.0f).margin(1e-5));
  CHECK(box[0][2].item<float>() == Approx(4.0f));
  CHECK(box[0][3].item<float>() == Approx(2.0f));
}

// Ultralytics' own OBBModel (8.4.117, run here by scripts/ultralytics84_obb_outputs.py) and
// yolotrain's, both with the formula weights and nc 2: the decoded output (NMS-ready rows; YOLO26's
// end-to-end top-k) and each branch's angles agree to 1e-4.
TEST_CASE("yolov8n-, yolo11n- and yolo26n-obb give Ultralytics 8.4's outputs on the same weights", "[nn][obb]") {
  nlohmann::json ref;
  std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/nn/data/ultralytics84_obb_outputs.json") >> ref;
  for (const std::string yaml : {"yolov8n-obb.yaml", "yolo11n-obb.yaml", "yolo26n-obb.yaml"}) {
    INFO(yaml);
    const nlohmann::json& r = ref.at(yaml);
    nn::DetectionModel model(nn::DetectionModelOptions(yaml).nc(2));
    CHECK(yolotrain::test::set_formula_weights(*model) == r.at("tensors_set").get<int>());
    CHECK(nn::summarize(*model).layers == r.at("layers").get<int>());
    model->eval();
    torch::NoGradGuard no_grad;
    const at::Tensor x = at::sin(0.11 * at::arange(3 * 64 * 96, at::kDouble)).abs().to(at::kFloat).view({1, 3, 64, 96});
    const nn::HeadOutputs heads = model->forward_heads(x);
    std::vector<std::pair<std::string, at::Tensor>> mine = {{"inference", model->head()->inference(heads)},
                                                            {"angle", heads.angle}};
    if (r.contains("one2one_angle")) mine.emplace_back("one2one_angle", heads.one2one_angle);
    for (const auto& [key, t] : mine) {
      const bool top_k = key == "inference" && model->head()->end2end();
      const at::Tensor want = top_k ? canonical_rows(from_json(r.at(key))) : from_json(r.at(key));
      const at::Tensor got = top_k ? canonical_rows(t) : t;
      REQUIRE(got.sizes() == want.sizes());
      INFO(key << " " << got.sizes() << " max difference " << (got - want).abs().max().item<double>());
      CHECK(yolotrain::test::agrees(got, want));
    }
  }
}
