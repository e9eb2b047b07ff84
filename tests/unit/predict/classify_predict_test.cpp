// Classification predictions (issue 54): the Predictor on a -cls model gives class probabilities and
// the top 5 as Ultralytics 8.4.117's ClassificationPredictor does (its centre crops, its softmax).
#include <ATen/ATen.h>

#include "yolotrain/predict/predictor.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <numeric>

#include "test_support.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn.hpp"
#include "yolotrain/predict/preprocess.hpp"

namespace fs = std::filesystem;
using yolotrain::predict::PredictOptions;
using yolotrain::predict::Prediction;
using yolotrain::predict::Predictor;

namespace {

PredictOptions at_size(std::int64_t imgsz) {
  PredictOptions o;
  o.imgsz_h = o.imgsz_w = imgsz;
  o.device = "cpu";
  return o;
}

}  // namespace

TEST_CASE("a classification Predictor gives each class's probability and the top 5 of the centre crop",
          "[predict][classify]") {
  yolotrain::test::TempDir tmp;
  namespace nn = yolotrain::nn;
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n-cls.yaml").nc(3).names({"a", "b", "c"}));
  const fs::path weights = tmp / "cls.safetensors";
  nn::save_weights(*model, weights, {{"names", yolotrain::io::encode_names(model->names())}});
  Predictor predictor(weights, at_size(32));
  CHECK(predictor.names() == std::vector<std::string>{"a", "b", "c"});
  yolotrain::data::Image image(40, 70);  // a gradient, wider than tall: the centre crop matters
  for (std::size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<std::uint8_t>(i * 7 % 251);
  const Prediction p = predictor.predict(image);
  CHECK(p.boxes.empty());
  REQUIRE(p.probs.size() == 3);
  CHECK(std::accumulate(p.probs.begin(), p.probs.end(), 0.0) == Approx(1.0).margin(1e-5));
  REQUIRE(p.top5.size() == 3);  // nc < 5: every class, most probable first
  CHECK(p.probs[p.top5[0]] >= p.probs[p.top5[1]]);
  CHECK(p.probs[p.top5[1]] >= p.probs[p.top5[2]]);
  CHECK(p.input_h == 32);
  CHECK(p.input_w == 32);
  // The same as the model's own softmax on the centre crop (shorter side to 32, the middle 32 x 32).
  model->eval();
  model->fuse();
  const at::Tensor x = yolotrain::predict::classify_preprocess({&image}, 32, 32).to(at::kFloat).div(255);
  const at::Tensor want = model->predict(x)[0];
  for (int c = 0; c < 3; ++c) CHECK(p.probs[c] == Approx(want[c].item<float>()).margin(1e-5));
}

// Ultralytics' own predictions of its yolo11n-cls trained on shapes-cls (scripts/ultralytics84_cls_predict.py):
// four shapes-cls images (64 px) and two coco8 ones (not square: the shorter side resized, the centre
// cropped), at imgsz 64 and 48; probabilities to 1e-4 and the same top 5. The checkpoint from
// $YOLOTRAIN_CLS_WEIGHTS or ../shared/weights/ultralytics (shapescls_yolo11n-cls/best.pt); skipped otherwise.
TEST_CASE("a classification Predictor gives Ultralytics' probabilities and top 5", "[predict][classify]") {
  std::vector<fs::path> places;
  if (const char* dir = std::getenv("YOLOTRAIN_CLS_WEIGHTS")) places.push_back(fs::path(dir) / "shapescls_yolo11n-cls");
  places.push_back(fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics/shapescls_yolo11n-cls");
  fs::path best;
  for (const auto& p : places) {
    if (best.empty() && fs::exists(p / "best.pt")) best = p / "best.pt";
  }
  if (best.empty()) {
    WARN("skipped: no shapescls_yolo11n-cls/best.pt in $YOLOTRAIN_CLS_WEIGHTS nor ../shared/weights/ultralytics");
    return;
  }
  const nlohmann::json ref = nlohmann::json::parse(
      std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/predict/data/ultralytics84_shapes_cls_predict.json"));
  REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(best)) == ref["checkpoint_sha256"]);
  yolotrain::test::TempDir tmp;
  const fs::path data =
      yolotrain::data::write_shapes_dataset(tmp / "shapes-cls", yolotrain::data::shapes_cls_options());
  const fs::path coco = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets/coco8/images/val";
  for (const std::string imgsz : {"64", "48"}) {
    Predictor predictor(best, at_size(std::stoll(imgsz)));
    for (const auto& [name, sizes] : ref["images"].items()) {
      fs::path image = coco / name;
      for (const char* cls : {"rectangle", "ellipse", "triangle", "cross"}) {
        if (fs::exists(data / "val" / cls / name)) image = data / "val" / cls / name;
      }
      if (!fs::exists(image)) continue;  // coco8 without ../shared
      INFO(image.string() << " at " << imgsz);
      const Prediction p = predictor.predict(image);
      const auto& want = sizes[imgsz];
      CHECK(p.top5 == want["top5"].get<std::vector<std::int64_t>>());
      const std::vector<float> probs = want["probs"].get<std::vector<float>>();
      REQUIRE(p.probs.size() == probs.size());
      for (std::size_t c = 0; c < probs.size(); ++c) CHECK(p.probs[c] == Approx(probs[c]).margin(1e-4));
    }
  }
}
