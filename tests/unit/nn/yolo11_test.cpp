// YOLO11 against Ultralytics 8.3.58: its genuine bccd_yolo11n checkpoint run through a
// transcription of Ultralytics' own module code (scripts/ultralytics_reference.py, Debian's
// python3-torch) and through yolotrain's network built from models/yolo11.yaml.
#include <ATen/ATen.h>

#include "test_support.hpp"
#include "ultralytics_reference.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/nn.hpp"
#include "yolotrain/predict/preprocess.hpp"

#include "catch.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace nn = yolotrain::nn;
namespace fs = std::filesystem;
using yolotrain::test::agrees;
using yolotrain::test::reference_forward;
using yolotrain::test::write_floats;

namespace {

const fs::path kYolo11Best = fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics/bccd_yolo11n/best.pt";

nn::DetectionModel yolo11_best() {
  const auto weights = yolotrain::io::read_model_weights(kYolo11Best);
  CHECK(weights.model_yaml == "yolo11n.yaml");
  nn::DetectionModel model = yolotrain::io::build_model(weights, kYolo11Best.string());
  model->eval();
  return model;
}

}  // namespace

TEST_CASE("YOLO11n with Ultralytics' best.pt gives Ultralytics' raw and decoded outputs", "[nn][yolo11]") {
  if (!fs::exists(kYolo11Best)) {
    WARN("skipped: " << kYolo11Best.string() << " is absent");
    return;
  }
  yolotrain::test::TempDir tmp;
  nn::DetectionModel model = yolo11_best();
  at::manual_seed(11);
  const at::Tensor x = at::rand({2, 3, 320, 256});
  torch::NoGradGuard no_grad;
  const std::vector<at::Tensor> raw = model->forward(x);
  std::vector<at::Tensor> mine{model->head()->decode(raw)};
  mine.insert(mine.end(), raw.begin(), raw.end());
  const auto ref = reference_forward(kYolo11Best, x, mine, tmp.path());
  for (size_t i = 0; i < mine.size(); ++i) {
    INFO("output " << i << " max difference " << (mine[i] - ref[i]).abs().max().item<double>());
    CHECK(agrees(mine[i], ref[i]));
  }
}

// yolo11s and yolo11m (every C3k2 with C3k blocks) exist here only as YAMLs: they are built a second
// time by a transcription of Ultralytics 8.3.58's parse_model and module constructors, given
// yolotrain's weights (drawn to keep the activations' scale, BatchNorm statistics too), and both
// forwards must agree.
TEST_CASE("yolo11s and yolo11m equal Ultralytics' parse_model and modules given the same weights", "[nn][yolo11]") {
  yolotrain::test::TempDir tmp;
  for (const std::string scale : {"s", "m"}) {
    INFO("yolo11" << scale);
    // The transcription is of 8.3.58's constructors (SPPF's cv1 with its SiLU): built like 8.3.
    nn::DetectionModel model(nn::DetectionModelOptions("yolo11" + scale + ".yaml").nc(5).ultralytics("8.3"));
    torch::NoGradGuard no_grad;
    at::manual_seed(5);
    std::ofstream index(tmp / "w.txt");
    std::ofstream values(tmp / "w.f32", std::ios::binary);
    for (const auto& [name, t] : nn::state_dict(*model)) {
      if (!t.is_floating_point()) continue;
      auto ends_with = [&](const std::string& suffix) {
        return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if (name.find("dfl") == std::string::npos) {
        if (ends_with("running_var")) t.uniform_(0.5, 1.5);
        else if (ends_with("bn.weight")) t.uniform_(0.7, 1.3);
        else if (t.dim() == 4) t.normal_(0, std::sqrt(2.0 / static_cast<double>(t[0].numel())));
        else t.normal_(0, 0.2);
      }
      index << name << "\n";
      const at::Tensor c = t.contiguous();
      values.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
    }
    index.close();
    values.close();
    model->eval();
    const at::Tensor x = at::rand({1, 3, 192, 160});
    const std::vector<at::Tensor> raw = model->forward(x);
    std::vector<at::Tensor> mine{model->head()->decode(raw)};
    mine.insert(mine.end(), raw.begin(), raw.end());
    write_floats(tmp / "in.f32", x);
    const std::string cmd = "/usr/bin/python3 " + std::string(YOLOTRAIN_SOURCE_DIR) +
                            "/scripts/ultralytics_reference.py --yaml " + std::string(YOLOTRAIN_SOURCE_DIR) +
                            "/models/yolo11.yaml " + scale + " 5 '" + (tmp / "w").string() + "' '" +
                            (tmp / "in.f32").string() + "' 1 192 160 '" + (tmp / "out.f32").string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const std::string bytes = yolotrain::test::slurp(tmp / "out.f32");
    size_t offset = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      const at::Tensor ref =
          at::from_blob(const_cast<char*>(bytes.data()) + offset, mine[i].sizes(), at::kFloat).clone();
      offset += static_cast<size_t>(mine[i].numel()) * sizeof(float);
      INFO("output " << i << " max difference " << (mine[i] - ref).abs().max().item<double>() << " of "
                     << ref.abs().max().item<double>());
      CHECK(agrees(mine[i], ref));
    }
    CHECK(offset == bytes.size());
  }
}

TEST_CASE("YOLO11n predictions on bccd val images equal Ultralytics' at conf 0.01", "[nn][yolo11]") {
  const fs::path images = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets/bccd/images/val";
  if (!fs::exists(kYolo11Best) || !fs::exists(images)) {
    WARN("skipped: " << kYolo11Best.string() << " or " << images.string() << " is absent");
    return;
  }
  yolotrain::test::TempDir tmp;
  nn::DetectionModel model = yolo11_best();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(images)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  files.resize(std::min<size_t>(files.size(), 6));
  yolotrain::metrics::NmsOptions nms;
  nms.conf = 0.01;
  nms.iou = 0.7;
  int64_t boxes = 0;
  torch::NoGradGuard no_grad;
  for (const auto& file : files) {
    INFO(file.string());
    const yolotrain::data::Image image = yolotrain::data::decode_image(file);
    const at::Tensor x =
        yolotrain::predict::preprocess({&image}, 320, 320, true, model->max_stride()).to(at::kFloat) / 255;
    const std::vector<at::Tensor> raw = model->forward(x);
    std::vector<at::Tensor> outputs{model->head()->decode(raw)};
    outputs.insert(outputs.end(), raw.begin(), raw.end());
    const at::Tensor& mine = outputs[0];
    const at::Tensor ref = reference_forward(kYolo11Best, x, outputs, tmp.path())[0];
    const at::Tensor a = yolotrain::metrics::non_max_suppression(mine, nms)[0];
    const at::Tensor b = yolotrain::metrics::non_max_suppression(ref, nms)[0];
    REQUIRE(a.size(0) == b.size(0));
    boxes += a.size(0);
    if (a.size(0) == 0) continue;
    CHECK((a.slice(1, 0, 4) - b.slice(1, 0, 4)).abs().max().item<double>() <= 0.1);
    CHECK((a.select(1, 4) - b.select(1, 4)).abs().max().item<double>() <= 1e-3);
    CHECK(a.select(1, 5).equal(b.select(1, 5)));
  }
  CHECK(boxes > 0);  // the 10-epoch model scores below 0.25 everywhere, but not below 0.01
}

TEST_CASE("the m, l and x scales use C3k blocks in every C3k2, n and s only where the row says", "[nn][yolo11]") {
  auto block_is_c3k = [](nn::DetectionModel& m, size_t layer) {
    return m->model[layer]->as<nn::C2fImpl>()->m->ptr(0)->as<nn::C3kImpl>() != nullptr;
  };
  nn::DetectionModel n(nn::DetectionModelOptions("yolo11n.yaml").nc(3));
  CHECK_FALSE(block_is_c3k(n, 2));  // [256, False, 0.25]
  CHECK(block_is_c3k(n, 6));        // [512, True]
  CHECK_FALSE(block_is_c3k(n, 13));
  nn::DetectionModel m(nn::DetectionModelOptions("yolo11m.yaml").nc(3));
  for (size_t layer : {2, 4, 6, 8, 13, 16, 19, 22}) CHECK(block_is_c3k(m, layer));
  CHECK(m->model[2]->as<nn::C2fImpl>()->m->size() == 1);  // 2 repeats * depth 0.5
  CHECK(n->layer_kind(10).name == "C2PSA");
  CHECK_FALSE(n->head()->options.legacy());
  nn::DetectionModel v8(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  CHECK(v8->head()->options.legacy());
}

TEST_CASE("fuse keeps YOLO11n's eval outputs", "[nn][yolo11]") {
  nn::DetectionModel model(nn::DetectionModelOptions("yolo11n.yaml").nc(3));
  torch::NoGradGuard no_grad;
  at::manual_seed(3);
  for (const auto& p : model->parameters()) p.normal_(0, 0.1);  // a fresh model's signal fades to nothing
  model->eval();
  const at::Tensor x = at::rand({1, 3, 160, 224});
  const at::Tensor before = model->predict(x);
  model->fuse();
  CHECK(nn::state_dict(*model).size() < 400);
  const at::Tensor after = model->predict(x);
  CHECK(agrees(after, before));
}

TEST_CASE("YOLO11 YAML rows are checked like any other", "[nn][yolo11]") {
  yolotrain::test::TempDir tmp;
  auto yaml = [&](const std::string& row) {
    const fs::path p = tmp / "bad.yaml";
    std::ofstream(p) << "nc: 2\nbackbone:\n  - [-1, 1, Conv, [64, 3, 2]]\n  - [-1, 1, Conv, [128, 3, 2]]\n" << row
                     << "\nhead:\n  - [[-1], 1, Detect, [nc]]\n";
    return p.string();
  };
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions(yaml("  - [-1, 1, C2PSA, [256]]"))),
                    Catch::Contains("C2PSA") && Catch::Contains("must equal its input's (128)"));
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions(yaml("  - [-1, 1, C2PSA, [128, 0.25]]"))),
                    Catch::Contains("at least 64"));
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions(yaml("  - [-1, 1, C3k2, [128, maybe]]"))),
                    Catch::Contains("args[1]") && Catch::Contains("True or False"));
  CHECK_THROWS_WITH(nn::DetectionModel(nn::DetectionModelOptions(yaml("  - [-1, 1, C4k, [128]]"))),
                    Catch::Contains("unknown module 'C4k'") && Catch::Contains("C3k2"));
  nn::DetectionModel ok(nn::DetectionModelOptions(yaml("  - [-1, 3, C2PSA, [128, 0.5]]")));
  CHECK(ok->model[2]->as<nn::C2PSAImpl>()->m->size() == 3);
}

// Ultralytics 8.3 prints "YOLO11n summary: 319 layers, 2,624,080 parameters, 2,624,064 gradients"
// and, fused, "238 layers, 2,616,248 parameters"; 8.4 counts leaf modules only: 182 and 101 layers
// (its `YOLO("yolo11n.yaml").info()`, run here). GFLOPs are counted as for YOLOv8 (2 x the
// convolutions' MACs, = its fused figure and its published 6.5).
TEST_CASE("the YOLO11n summary counts layers and parameters as Ultralytics", "[nn][yolo11]") {
  for (const auto& [version, layers, fused_layers] :
       std::vector<std::tuple<std::string, int64_t, int64_t>>{{"8.3", 319, 238}, {"8.4", 182, 101}}) {
    INFO("built like Ultralytics " << version);
    nn::DetectionModel model(nn::DetectionModelOptions("yolo11n.yaml").ultralytics(version));
    CHECK_THAT(nn::summarize(*model).to_string(),
               Catch::Equals("yolo11n summary: " + std::to_string(layers) +
                             " layers, 2,624,080 parameters, 2,624,064 gradients, 6.5 GFLOPs"));
    model->eval();
    model->fuse();
    const auto fused = nn::summarize(*model);
    CHECK(fused.layers == fused_layers);
    CHECK(fused.parameters == 2616248);
  }
}
