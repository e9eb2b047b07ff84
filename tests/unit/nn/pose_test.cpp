// Pose models against Ultralytics 8.4.117 (issue 53): YOLOv8-pose, YOLO11-pose and YOLO26-pose built
// from their YAMLs (parameter counts and layer counts of 8.4.117's PoseModel run here, the head's
// outputs and state-dict names), the dataset's kpt_shape replacing the YAML's, and the keypoint
// decoding of Pose and Pose26 (Pose.kpts_decode, Pose26.kpts_decode).
#include <ATen/ATen.h>

#include "formula_weights.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <tuple>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::canonical_rows;
using yolotrain::test::count_parameters;
using yolotrain::test::from_json;

// PoseModel(yaml) of 8.4.117 at each YAML's own nc (v8: 1, 11 and 26: 80): sum of numel() over
// parameters(), and the leaves of named_modules() (what its summary counts as layers).
TEST_CASE("the -pose models of every scale have Ultralytics 8.4's parameter counts", "[nn][pose]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {
      {"yolov8n-pose", 3295470},  {"yolov8s-pose", 11626046}, {"yolov8m-pose", 26464462}, {"yolov8l-pose", 44489196},
      {"yolov8x-pose", 69491724}, {"yolo11n-pose", 2908507},  {"yolo11s-pose", 9948811},  {"yolo11m-pose", 20973273},
      {"yolo11l-pose", 26230745}, {"yolo11x-pose", 58889881}, {"yolo26n-pose", 3747554},  {"yolo26s-pose", 11870498},
      {"yolo26m-pose", 24344482}, {"yolo26l-pose", 28747938}, {"yolo26x-pose", 62914350}};
  for (const auto& [name, params] : counts) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml"));
    CHECK(count_parameters(*model) == params);
    CHECK(model->task() == "pose");
    CHECK(model->head()->nk() == 51);
  }
}

TEST_CASE("the -pose models' summaries count Ultralytics 8.4's layers", "[nn][pose]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {
      {"yolov8n-pose", 145}, {"yolo11n-pose", 197}, {"yolo26n-pose", 363}};
  for (const auto& [name, layers] : counts) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml"));
    CHECK(nn::summarize(*model).layers == layers);
  }
}

TEST_CASE("a Pose head gives raw keypoints per anchor, Pose26 their scales in training and Ultralytics' names",
          "[nn][pose]") {
  nn::DetectionModel v8(nn::DetectionModelOptions("yolov8n-pose.yaml").nc(2).kpt_shape({5, 3}));
  CHECK(v8->head()->nk() == 15);
  const nn::HeadOutputs heads = v8->forward_heads(at::rand({2, 3, 128, 96}));
  const int64_t anchors = 16 * 12 + 8 * 6 + 4 * 3;
  CHECK(heads.keypoints.sizes() == at::IntArrayRef({2, 15, anchors}));
  CHECK_FALSE(heads.keypoint_sigma.defined());
  CHECK_FALSE(heads.mask_coefficients.defined());
  v8->eval();
  {
    torch::NoGradGuard no_grad;
    CHECK(v8->predict(at::rand({1, 3, 64, 64})).sizes() == at::IntArrayRef({1, 4 + 2 + 15, 84}));
  }

  nn::DetectionModel y26(nn::DetectionModelOptions("yolo26n-pose.yaml").nc(1));
  auto head = y26->head();
  REQUIRE(head->flow_model);
  REQUIRE(head->one2one_cv4_kpts);
  std::set<std::string> names;
  for (const auto& entry : nn::state_dict(*y26)) names.insert(entry.first);
  for (const char* name : {"model.23.flow_model.s.0.0.weight", "model.23.flow_model.t.5.4.bias",
                           "model.23.flow_model.mask", "model.23.cv4.0.1.conv.weight", "model.23.cv4_kpts.2.weight",
                           "model.23.cv4_sigma.0.bias", "model.23.one2one_cv4_sigma.2.weight"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  const auto a = head->cv4_kpts->named_parameters(), b = head->one2one_cv4_kpts->named_parameters();
  for (const auto& p : a) CHECK(at::equal(p.value(), b[p.key()]));  // Ultralytics' deepcopy
  CHECK(head->cv4_sigma->ptr(0)->as<torch::nn::Conv2dImpl>()->weight.size(0) == 34);  // x, y per keypoint
  y26->train();
  const nn::HeadOutputs train = y26->forward_heads(at::rand({1, 3, 64, 64}));
  CHECK(train.keypoints.sizes() == at::IntArrayRef({1, 51, 84}));
  CHECK(train.keypoint_sigma.sizes() == at::IntArrayRef({1, 34, 84}));
  CHECK(train.one2one_keypoint_sigma.sizes() == at::IntArrayRef({1, 34, 84}));
  y26->eval();
  torch::NoGradGuard no_grad;
  const nn::HeadOutputs eval = y26->forward_heads(at::rand({1, 3, 64, 64}));
  CHECK_FALSE(eval.keypoint_sigma.defined());  // the scales only feed the RLE loss
  CHECK(head->inference(eval).sizes() == at::IntArrayRef({1, 84, 6 + 51}));
}

// kpts_decode by hand: v8/11 x = (raw * 2 + anchor - 0.5) * stride, YOLO26 x = (raw + anchor) * stride,
// the visibility through a sigmoid; for the first anchor of P3 (anchor 0.5, stride 8).
TEST_CASE("keypoints decode around their anchor as Pose and Pose26 decode them", "[nn][pose]") {
  for (const bool pose26 : {false, true}) {
    INFO((pose26 ? "yolo26n-pose" : "yolo11n-pose"));
    nn::DetectionModel m(nn::DetectionModelOptions(pose26 ? "yolo26n-pose.yaml" : "yolo11n-pose.yaml").nc(1));
    m->eval();
    torch::NoGradGuard no_grad;
    const nn::HeadOutputs h = m->forward_heads(at::rand({1, 3, 64, 64}));
    const at::Tensor decoded = m->head()->decode_keypoints(h.keypoints, h.one2many);
    const float raw_x = h.keypoints[0][0][0].item<float>(), raw_y = h.keypoints[0][1][0].item<float>();
    const float raw_v = h.keypoints[0][2][0].item<float>();
    const float want_x = pose26 ? (raw_x + 0.5f) * 8 : (raw_x * 2 + 0.f) * 8;
    const float want_y = pose26 ? (raw_y + 0.5f) * 8 : (raw_y * 2 + 0.f) * 8;
    CHECK(decoded[0][0][0].item<float>() == Approx(want_x));
    CHECK(decoded[0][1][0].item<float>() == Approx(want_y));
    CHECK(decoded[0][2][0].item<float>() == Approx(1 / (1 + std::exp(-raw_v))));
    const float last = h.keypoints[0][0][83].item<float>();  // P5's last anchor: (1.5, 1.5) at stride 32
    CHECK(decoded[0][0][83].item<float>() == Approx(pose26 ? (last + 1.5f) * 32 : (last * 2 + 1.f) * 32));
  }
}

TEST_CASE("a pose YAML without kpt_shape is refused naming what to give, a bad kpt_shape too", "[nn][pose]") {
  yolotrain::test::TempDir dir;
  std::string yaml = yolotrain::test::slurp(nn::resolve_model("yolo11-pose.yaml").path);
  const auto at = yaml.find("kpt_shape: [17, 3]");
  REQUIRE(at != std::string::npos);
  yaml.erase(at, std::string("kpt_shape: [17, 3]").size());
  std::ofstream(dir / "nokpt.yaml", std::ios::binary) << yaml;
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions((dir / "nokpt.yaml").string())),
                    Catch::Contains("no kpt_shape: the YAML names none (kpt_shape: [17, 3])"));
  CHECK_NOTHROW(nn::DetectionModel(nn::DetectionModelOptions((dir / "nokpt.yaml").string()).kpt_shape({4, 2})));
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions("yolo11n-pose.yaml").kpt_shape({4, 4})),
                    Catch::Contains("kpt_shape must be [keypoints, 2 or 3] (x y, or x y visible), got [4, 4]"));
}


// Ultralytics' own PoseModel (8.4.117, run here by scripts/ultralytics84_pose_outputs.py) and
// yolotrain's, both with the formula weights and a dataset's nc 2 / kpt_shape [5, 3]: the decoded
// output (NMS-ready rows; YOLO26's end-to-end top-k) and each branch's raw keypoints agree to 1e-4.
TEST_CASE("yolov8n-, yolo11n- and yolo26n-pose give Ultralytics 8.4's outputs on the same weights", "[nn][pose]") {
  nlohmann::json ref;
  std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/nn/data/ultralytics84_pose_outputs.json") >> ref;
  for (const std::string yaml : {"yolov8n-pose.yaml", "yolo11n-pose.yaml", "yolo26n-pose.yaml"}) {
    INFO(yaml);
    const nlohmann::json& r = ref.at(yaml);
    nn::DetectionModel model(nn::DetectionModelOptions(yaml).nc(2).kpt_shape({5, 3}));
    // the same names, none missing:
    CHECK(yolotrain::test::set_formula_weights(*model) == r.at("tensors_set").get<int>());
    model->eval();
    torch::NoGradGuard no_grad;
    const at::Tensor x = at::sin(0.11 * at::arange(3 * 64 * 96, at::kDouble)).abs().to(at::kFloat).view({1, 3, 64, 96});
    const nn::HeadOutputs heads = model->forward_heads(x);
    std::vector<std::pair<std::string, at::Tensor>> mine = {{"inference", model->head()->inference(heads)},
                                                            {"keypoints", heads.keypoints}};
    if (r.contains("one2one_keypoints")) mine.emplace_back("one2one_keypoints", heads.one2one_keypoints);
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
