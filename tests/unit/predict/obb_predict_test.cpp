// OBB predictions (issue 55): the Predictor on an -obb model (read from .safetensors, its YAML named from
// the angle branch) gives rotated boxes — Detection::xywhr, its corners, its upright bounds — after
// rotated NMS, and annotate draws them as polygons. Equality with Ultralytics 8.4.117's OBBPredictor is
// checked by hand with Ultralytics-trained checkpoints (scripts/ultralytics84_obb_predict.py,
// docs/predict.md).
#include <ATen/ATen.h>

#include "yolotrain/predict/predictor.hpp"

#include "catch.hpp"

#include <algorithm>
#include <cmath>

#include "test_support.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn.hpp"
#include "yolotrain/predict/annotate.hpp"
#include "yolotrain/data/sample_source.hpp"

namespace fs = std::filesystem;
using yolotrain::predict::Detection;
using yolotrain::predict::PredictOptions;
using yolotrain::predict::Prediction;
using yolotrain::predict::Predictor;

TEST_CASE("an OBB Predictor gives rotated boxes, their corners and upright bounds, drawn as polygons",
          "[predict][obb]") {
  yolotrain::test::TempDir tmp;
  namespace nn = yolotrain::nn;
  at::manual_seed(3);
  nn::DetectionModel model(nn::DetectionModelOptions("yolo11n-obb.yaml").nc(2).names({"a", "b"}));
  const fs::path weights = tmp / "obb.safetensors";
  nn::save_weights(*model, weights, {{"names", yolotrain::io::encode_names(model->names())}});
  CHECK(yolotrain::io::read_model_weights(weights).model_yaml == "yolo11n-obb.yaml");
  PredictOptions o;
  o.imgsz_h = o.imgsz_w = 96;
  o.device = "cpu";
  o.conf = 1e-4;  // an untrained head's scores are small
  Predictor predictor(weights, o);
  yolotrain::data::ShapesOptions shapes = yolotrain::data::shapes_obb_options();
  shapes.imgsz = 128;
  const yolotrain::data::Image image = yolotrain::data::shapes_sample(shapes, "val", 0).image;
  const Prediction p = predictor.predict(image);
  REQUIRE_FALSE(p.boxes.empty());
  for (std::size_t i = 0; i < p.boxes.size(); ++i) {
    const Detection& d = p.boxes[i];
    REQUIRE(d.xywhr.size() == 5);
    if (i) CHECK(d.conf <= p.boxes[i - 1].conf);
    CHECK(d.xywhr[4] >= -M_PI / 4 - 1e-5);  // OBB's angle: (sigmoid - 0.25) * pi
    CHECK(d.xywhr[4] <= 3 * M_PI / 4 + 1e-5);
    const std::vector<float> k = d.corners();
    REQUIRE(k.size() == 8);
    CHECK(d.x1 == std::min({k[0], k[2], k[4], k[6]}));
    CHECK(d.y2 == std::max({k[1], k[3], k[5], k[7]}));
    const float side = std::hypot(k[2] - k[0], k[3] - k[1]), other = std::hypot(k[6] - k[0], k[7] - k[1]);
    CHECK(side == Approx(d.xywhr[3]).margin(1e-3));  // corner 1 -> 2 spans the height, 1 -> 4 the width
    CHECK(other == Approx(d.xywhr[2]).margin(1e-3));
  }
  // Drawn as its closed polygon: pixels on the turned box's edges change, its centre and the corners of
  // the image do not.
  Detection d;
  d.xywhr = {64, 64, 80, 30, 0.5f};
  d.name = "a";
  yolotrain::data::Image drawn(128, 128);
  yolotrain::predict::AnnotateOptions no_labels;
  no_labels.show_labels = false;
  yolotrain::predict::draw_detections(drawn, {d}, no_labels);
  const auto at = [&](float x, float y) {
    const std::uint8_t* p = drawn.pixel(static_cast<int>(std::lround(y)), static_cast<int>(std::lround(x)));
    return p[0] + p[1] + p[2];
  };
  const std::vector<float> k = d.corners();
  CHECK(at((k[0] + k[2]) / 2, (k[1] + k[3]) / 2) > 0);  // the middle of an edge
  CHECK(at(64, 64) == 0);
  CHECK(at(2, 2) == 0);
}
