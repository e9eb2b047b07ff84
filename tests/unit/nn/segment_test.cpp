// Segmentation models against Ultralytics 8.4.117: YOLOv8-seg, YOLO11-seg and YOLO26-seg built from
// their YAMLs (parameter counts, layer counts, the head's outputs), and the genuine coco128seg_*
// checkpoints (written by 8.4.117's own trainer) run through a transcription of 8.4.117's module code
// (scripts/ultralytics_reference.py, Debian's python3-torch) and through yolotrain.
#include <ATen/ATen.h>

#include "test_support.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::agrees;
using yolotrain::test::count_parameters;
using yolotrain::test::reference_forward;

namespace {

const fs::path kSegWeights = fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics";

}  // namespace

// `SegmentationModel(yaml)` of 8.4.117 run here: its parameters and the leaves of named_modules()
// (8.4's layer count); the yolo11/yolo26 figures equal the comments of Ultralytics' YAMLs.
TEST_CASE("the -seg models of every scale have Ultralytics 8.4's parameter counts", "[nn][segment]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {
      {"yolov8n-seg", 3409968},  {"yolov8s-seg", 11821056}, {"yolov8m-seg", 27285968}, {"yolov8l-seg", 45997728},
      {"yolov8x-seg", 71827888}, {"yolo11n-seg", 2876848},  {"yolo11s-seg", 10113248}, {"yolo11m-seg", 22420896},
      {"yolo11l-seg", 27678368}, {"yolo11x-seg", 62142656}, {"yolo26n-seg", 3126280},  {"yolo26s-seg", 11505800},
      {"yolo26m-seg", 27112072}, {"yolo26l-seg", 31515528}, {"yolo26x-seg", 70693800}};
  for (const auto& [name, params] : counts) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml"));
    CHECK(count_parameters(*model) == params);
    CHECK(model->task() == "segment");
    CHECK(model->head()->options.nm() == 32);
  }
}

TEST_CASE("the -seg models' summaries count Ultralytics 8.4's layers", "[nn][segment]") {
  for (const auto& [name, layers] : std::vector<std::pair<std::string, int64_t>>{
           {"yolov8n-seg", 152}, {"yolo11n-seg", 204}, {"yolo26n-seg", 309}}) {
    INFO(name);
    nn::DetectionModel model(nn::DetectionModelOptions(name + ".yaml"));
    CHECK(nn::summarize(*model).layers == layers);
  }
}

TEST_CASE("a Segment head gives mask coefficients and prototypes, Segment26 its semantic logits", "[nn][segment]") {
  nn::DetectionModel v8(nn::DetectionModelOptions("yolov8n-seg.yaml").nc(3));
  CHECK(v8->head()->options.npr() == 64);  // 256 scaled by width 0.25
  const nn::HeadOutputs heads = v8->forward_heads(at::rand({2, 3, 128, 96}));
  const int64_t anchors = 16 * 12 + 8 * 6 + 4 * 3;
  CHECK(heads.mask_coefficients.sizes() == at::IntArrayRef({2, 32, anchors}));
  CHECK(heads.proto.sizes() == at::IntArrayRef({2, 32, 32, 24}));  // twice P3's resolution
  CHECK_FALSE(heads.semantic.defined());
  CHECK_FALSE(heads.one2one_mask_coefficients.defined());
  v8->eval();
  torch::NoGradGuard no_grad;
  CHECK(v8->predict(at::rand({1, 3, 64, 64})).sizes() == at::IntArrayRef({1, 4 + 3 + 32, 84}));

  nn::DetectionModel y26(nn::DetectionModelOptions("yolo26n-seg.yaml").nc(3));
  auto head = y26->head();
  REQUIRE(head->one2one_cv4);
  const auto a = head->cv4->named_parameters(), b = head->one2one_cv4->named_parameters();
  for (const auto& p : a) CHECK(at::equal(p.value(), b[p.key()]));  // Ultralytics' deepcopy
  y26->train();
  const nn::HeadOutputs train = y26->forward_heads(at::rand({1, 3, 64, 64}));
  CHECK(train.semantic.sizes() == at::IntArrayRef({1, 3, 8, 8}));  // P3's resolution, nc channels
  CHECK(train.one2one_mask_coefficients.sizes() == at::IntArrayRef({1, 32, 84}));
  y26->eval();
  const nn::HeadOutputs eval = y26->forward_heads(at::rand({1, 3, 64, 64}));
  CHECK_FALSE(eval.semantic.defined());  // Proto26 gives the prototypes alone outside training
  CHECK(head->inference(eval).sizes() == at::IntArrayRef({1, 84, 6 + 32}));
}

// The genuine checkpoints: read natively (SegmentationModel, Proto / Proto26, ConvTranspose2d), and
// every output equal to Ultralytics' forward over the modules pickled in the file.
TEST_CASE("coco128-seg best.pt of YOLOv8n-seg, YOLO11n-seg, YOLO26n-seg: outputs equal Ultralytics 8.4's",
          "[nn][segment]") {
  struct Case {
    std::string folder, yaml;
    int64_t params, tensors;
    bool end2end;
  };
  for (const auto& c : std::vector<Case>{{"coco128seg_yolov8n-seg", "yolov8n-seg.yaml", 3409968, 417, false},
                                         {"coco128seg_yolo11n-seg", "yolo11n-seg.yaml", 2876848, 561, false},
                                         {"coco128seg_yolo26n-seg", "yolo26n-seg.yaml", 3126280, 844, true}}) {
    const fs::path pt = kSegWeights / c.folder / "best.pt";
    if (!fs::exists(pt)) {
      WARN("skipped: " << pt.string() << " is absent");
      continue;
    }
    INFO(c.folder);
    const auto weights = yolotrain::io::read_model_weights(pt);
    CHECK(weights.model_yaml == c.yaml);
    CHECK(weights.builds_like == "8.4");
    nn::DetectionModel model = yolotrain::io::build_model(weights, pt.string());
    CHECK(count_parameters(*model) == c.params);  // PROVENANCE.md
    CHECK(nn::state_dict(*model).size() == static_cast<size_t>(c.tensors));
    model->eval();
    yolotrain::test::TempDir tmp;
    at::manual_seed(40);
    const at::Tensor x = at::rand({2, 3, 160, 224});
    torch::NoGradGuard no_grad;
    const nn::HeadOutputs heads = model->forward_heads(x);
    std::vector<at::Tensor> mine{model->head()->inference(heads)};
    mine.insert(mine.end(), heads.one2many.begin(), heads.one2many.end());
    mine.insert(mine.end(), heads.one2one.begin(), heads.one2one.end());
    mine.push_back(heads.mask_coefficients);
    if (c.end2end) mine.push_back(heads.one2one_mask_coefficients);
    mine.push_back(heads.proto);
    CHECK(mine.size() == (c.end2end ? 10u : 6u));
    const auto ref = reference_forward(pt, x, mine, tmp.path());
    for (size_t i = 0; i < mine.size(); ++i) {
      INFO("output " << i << " " << mine[i].sizes() << " max difference "
                     << (mine[i] - ref[i]).abs().max().item<double>());
      CHECK(agrees(mine[i], ref[i]));
    }
  }
}
