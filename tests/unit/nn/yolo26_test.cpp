// YOLO26 against Ultralytics 8.4.117: the network built from models/yolo26.yaml, its parameter
// counts and state-dict names, and the genuine bccd_yolo26n checkpoint (written by 8.4.117's own
// trainer) run through a transcription of 8.4.117's module code (scripts/ultralytics_reference.py,
// Debian's python3-torch) and through yolotrain.
#include <ATen/ATen.h>

#include "test_support.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/io/ultralytics_pt.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"

#include <algorithm>
#include <filesystem>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::agrees;
using yolotrain::test::count_parameters;
using yolotrain::test::reference_forward;

namespace {

const fs::path kWeights = fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics";
const fs::path kYolo26Best = kWeights / "bccd_yolo26n/best.pt";

}  // namespace

// Ultralytics 8.4.117's own counts (yolo26.yaml's comments; `YOLO("yolo26n.yaml").info()` run
// here prints 260 layers, 2,572,280 parameters).
TEST_CASE("yolo26n/s/m/l/x have Ultralytics 8.4's parameter counts", "[nn][yolo26]") {
  const std::vector<std::pair<std::string, int64_t>> counts = {{"n", 2572280},
                                                                {"s", 10009784},
                                                                {"m", 21896248},
                                                                {"l", 26299704},
                                                                {"x", 58993368}};
  for (const auto& [scale, params] : counts) {
    INFO("yolo26" << scale);
    nn::DetectionModel model(nn::DetectionModelOptions("yolo26" + scale + ".yaml"));
    CHECK(count_parameters(*model) == params);
    CHECK(model->head()->end2end());
    CHECK(model->head()->options.reg_max() == 1);
    CHECK(model->head()->dfl.is_empty());
  }
}

TEST_CASE("YOLO26 built as Ultralytics 8.3 is refused with the reason", "[nn][yolo26]") {
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions("yolo26n.yaml").ultralytics("8.3")),
                    Catch::Contains("exists only since Ultralytics 8.4") && Catch::Contains("compat=8.4"));
}

TEST_CASE("YOLO26n's summary and its end-to-end head", "[nn][yolo26]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolo26n.yaml"));
  const auto summary = nn::summarize(*model);
  CHECK(summary.layers == 260);
  CHECK(summary.parameters == 2572280);
  CHECK(summary.gradients == 2572280);  // no DFL conv
  // The one-to-one branch starts as a copy of the one-to-many one (Ultralytics' deepcopy).
  auto head = model->head();
  const auto a = head->cv3->named_parameters(), b = head->one2one_cv3->named_parameters();
  REQUIRE(a.size() == b.size());
  for (const auto& p : a) CHECK(at::equal(p.value(), b[p.key()]));
  // 8.4's bias_init: box biases 2.0 on both branches.
  CHECK(head->one2one_cv2->ptr(0)->children().back()->as<torch::nn::Conv2dImpl>()->bias.eq(2.0).all().item<bool>());
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor out = model->predict(at::rand({2, 3, 320, 256}));
  CHECK(out.sizes() == at::IntArrayRef({2, 300, 6}));  // top-k over 10 x 8 + 20 x 16 + 40 x 32 = 1680 anchors
  head->set_end2end(false);
  CHECK(model->predict(at::rand({1, 3, 64, 64})).sizes() == at::IntArrayRef({1, 84, 84}));  // NMS input
  head->set_end2end(true);
  CHECK(model->predict(at::rand({1, 3, 64, 64})).sizes() == at::IntArrayRef({1, 84, 6}));  // k = min(300, 84)
}

TEST_CASE("8.4's SPPF and C3k2 rows: pooling repeats, shortcut, attention blocks", "[nn][yolo26]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolo26n.yaml").nc(3));
  const auto* sppf = model->model[9]->as<nn::SPPFImpl>();
  REQUIRE(sppf != nullptr);
  CHECK(sppf->options.n() == 3);
  CHECK(sppf->options.shortcut());
  CHECK(sppf->cv1->act.is_empty());  // 8.4.0 removed cv1's SiLU
  const auto names = nn::state_dict(*model);
  auto has = [&](const std::string& name) {
    return std::any_of(names.begin(), names.end(), [&](const auto& t) { return t.first == name; });
  };
  CHECK(has("model.22.m.0.0.cv1.conv.weight"));       // C3k2 [1024, True, 0.5, True]: Bottleneck ...
  CHECK(has("model.22.m.0.1.attn.qkv.conv.weight"));  // ... then PSABlock
  CHECK(has("model.23.one2one_cv3.2.2.bias"));
  CHECK_FALSE(has("model.23.dfl.conv.weight"));
  nn::DetectionModel v83(nn::DetectionModelOptions("yolo11n.yaml").ultralytics("8.3"));
  CHECK_FALSE(v83->model[9]->as<nn::SPPFImpl>()->cv1->act.is_empty());
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions("yolo11n.yaml").ultralytics("9.1")),
                    Catch::Contains("'9.1'") && Catch::Contains("\"8.3\""));
}

TEST_CASE("YOLO26n best.pt: both branches and the top-k output equal Ultralytics 8.4's", "[nn][yolo26]") {
  if (!fs::exists(kYolo26Best)) {
    WARN("skipped: " << kYolo26Best.string() << " is absent");
    return;
  }
  const auto weights = yolotrain::io::read_model_weights(kYolo26Best);
  CHECK(weights.model_yaml == "yolo26n.yaml");
  CHECK(weights.builds_like == "8.4");  // its SPPF's cv1 has no SiLU
  CHECK(weights.nc == 3);
  nn::DetectionModel model = yolotrain::io::build_model(weights, kYolo26Best.string());
  CHECK(count_parameters(*model) == 2504970);  // PROVENANCE.md
  CHECK(nn::state_dict(*model).size() == 708);
  model->eval();
  yolotrain::test::TempDir tmp;
  at::manual_seed(26);
  const at::Tensor x = at::rand({2, 3, 320, 256});
  torch::NoGradGuard no_grad;
  const nn::HeadOutputs heads = model->forward_heads(x);
  std::vector<at::Tensor> mine{model->head()->inference(heads)};
  mine.insert(mine.end(), heads.one2many.begin(), heads.one2many.end());
  mine.insert(mine.end(), heads.one2one.begin(), heads.one2one.end());
  REQUIRE(mine.size() == 7);
  CHECK(mine[0].sizes() == at::IntArrayRef({2, 300, 6}));
  const auto ref = reference_forward(kYolo26Best, x, mine, tmp.path());
  for (size_t i = 0; i < mine.size(); ++i) {
    INFO("output " << i << " max difference " << (mine[i] - ref[i]).abs().max().item<double>());
    CHECK(agrees(mine[i], ref[i]));
  }
}

TEST_CASE("a .pt says whose SPPF it pickled", "[nn][yolo26]") {
  for (const auto& [folder, version] : std::vector<std::pair<std::string, std::string>>{
           {"bccd_yolov8n", "8.3"}, {"bccd_yolo11n", "8.3"}, {"bccd_yolo26n", "8.4"}}) {
    const fs::path pt = kWeights / folder / "best.pt";
    if (!fs::exists(pt)) {
      WARN("skipped: " << pt.string() << " is absent");
      continue;
    }
    INFO(folder);
    CHECK(yolotrain::io::read_ultralytics_pt(pt).builds_like == version);
  }
}
