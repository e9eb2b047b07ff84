#include "yolotrain/predict/predictor.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "test_support.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using yolotrain::predict::Detection;
using yolotrain::predict::PredictOptions;
using yolotrain::predict::Prediction;
using yolotrain::predict::Predictor;

namespace {

const fs::path kBest = fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics" / "bccd_yolov8n" / "best.pt";
const fs::path kImages = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / "bccd" / "images" / "val";

PredictOptions at320() {
  PredictOptions o;
  o.imgsz_h = o.imgsz_w = 320;
  o.device = "cpu";
  return o;
}

bool same(const Prediction& a, const Prediction& b, float px, float conf) {
  if (a.boxes.size() != b.boxes.size()) return false;
  for (std::size_t i = 0; i < a.boxes.size(); ++i) {
    const Detection &p = a.boxes[i], &q = b.boxes[i];
    if (p.cls != q.cls || std::abs(p.conf - q.conf) > conf) return false;
    for (auto [u, v] : {std::pair{p.x1, q.x1}, {p.y1, q.y1}, {p.x2, q.x2}, {p.y2, q.y2}}) {
      if (std::abs(u - v) > px) return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("Predictor detects in Ultralytics' best.pt as its predictor does", "[predict]") {
  if (!fs::exists(kBest) || !fs::exists(kImages)) {
    WARN("skipped: " << kBest.string() << " or the bccd images are absent");
    return;
  }
  Predictor predictor(kBest, at320());
  CHECK(predictor.names() == std::vector<std::string>{"RBC", "WBC", "Platelets"});
  const fs::path image = kImages / "BloodImage_00000.jpg";
  const Prediction p = predictor.predict(image);
  // 640x480 at imgsz 320: r = 0.5 -> 320x240, padded to the next multiple of 32 in height only.
  CHECK(p.orig_w == 640);
  CHECK(p.orig_h == 480);
  CHECK(p.input_w == 320);
  CHECK(p.input_h == 256);
  REQUIRE(p.boxes.size() > 3);
  CHECK(p.boxes.size() <= 300);
  float last = 1.0f;
  for (const Detection& d : p.boxes) {
    CHECK(d.conf > 0.25f);
    CHECK(d.conf <= last);
    last = d.conf;
    CHECK(0 <= d.x1);
    CHECK(d.x1 <= d.x2);
    CHECK(d.x2 <= 640);
    CHECK(0 <= d.y1);
    CHECK(d.y1 <= d.y2);
    CHECK(d.y2 <= 480);
    REQUIRE(d.cls >= 0);
    REQUIRE(d.cls < 3);
    CHECK(d.name == predictor.names()[d.cls]);
  }

  SECTION("a path, a decoded Image and RGB or BGR pixels give the same detections") {
    const yolotrain::data::Image bgr = yolotrain::data::decode_image(image);
    CHECK(same(predictor.predict(bgr), p, 0, 0));
    yolotrain::predict::PixelView view{bgr.pixels.data(), bgr.height, bgr.width, true, 0};
    CHECK(same(predictor.predict(view), p, 0, 0));
    std::vector<std::uint8_t> rgb(bgr.pixels);
    for (std::size_t i = 0; i < rgb.size(); i += 3) std::swap(rgb[i], rgb[i + 2]);
    view.pixels = rgb.data();
    view.bgr = false;
    CHECK(same(predictor.predict(view), p, 0, 0));
  }
  SECTION("a batch of same-sized images is letterboxed as one image and gives its detections") {
    const auto image2 = yolotrain::data::decode_image(kImages / "BloodImage_00002.jpg");
    const auto batch = predictor.predict({yolotrain::data::decode_image(image), image2});
    REQUIRE(batch.size() == 2);
    CHECK(batch[0].input_h == 256);
    CHECK(same(batch[0], p, 1e-3f, 1e-5f));
    CHECK(same(batch[1], predictor.predict(image2), 1e-3f, 1e-5f));
    CHECK(batch[0].speed.inference > 0);
  }
  SECTION("Conv+BN fusion changes boxes by float noise only") {
    PredictOptions unfused = at320();
    unfused.fuse = false;
    CHECK(same(Predictor(kBest, unfused).predict(image), p, 0.02f, 1e-4f));
  }
  SECTION("classes, max_det and conf filter the detections") {
    PredictOptions o = at320();
    o.classes = std::vector<std::int64_t>{1};
    o.conf = 0.01;
    for (const Detection& d : Predictor(kBest, o).predict(image).boxes) CHECK(d.cls == 1);
    o.classes.reset();
    o.max_det = 2;
    CHECK(Predictor(kBest, o).predict(image).boxes.size() == 2);
  }
  SECTION("an image twice the size gives boxes twice as large") {
    // The same pixels upscaled 2x letterbox to (nearly) the same input, so the boxes scale back 2x.
    const auto small = yolotrain::data::decode_image(image);
    yolotrain::data::Image big(small.height * 2, small.width * 2);
    for (int y = 0; y < big.height; ++y) {
      for (int x = 0; x < big.width; ++x) std::copy_n(small.pixel(y / 2, x / 2), 3, big.pixel(y, x));
    }
    const Prediction q = predictor.predict(big);
    CHECK(q.input_h == 256);
    int matched = 0;
    for (const Detection& d : p.boxes) {
      if (d.conf < 0.4f) continue;
      for (const Detection& e : q.boxes) {
        if (e.cls == d.cls && std::abs(e.x1 - 2 * d.x1) < 6 && std::abs(e.y2 - 2 * d.y2) < 6 &&
            std::abs(e.x2 - 2 * d.x2) < 6 && std::abs(e.y1 - 2 * d.y1) < 6) {
          ++matched;
          break;
        }
      }
    }
    CHECK(matched >= 3);
  }
}

TEST_CASE("Predictor names the file it cannot read", "[predict]") {
  if (!fs::exists(kBest)) {
    WARN("skipped: " << kBest.string() << " is absent");
    return;
  }
  yolotrain::test::TempDir tmp;
  std::ofstream(tmp / "broken.jpg") << "not a jpeg";
  Predictor predictor(kBest, at320());
  CHECK_THROWS_WITH(predictor.predict(tmp / "broken.jpg"), Catch::Contains("broken.jpg"));
  CHECK_THROWS_WITH(Predictor(tmp / "missing.pt"), Catch::Contains("missing.pt") && Catch::Contains("no such file"));
  CHECK_THROWS_AS(predictor.predict(yolotrain::data::Image{}), yolotrain::Error);
}

// Ultralytics 8.4.117's own predictor (YOLO(best.pt).predict(imgsz=320, conf=0.01), run here by
// scripts/ultralytics84_predict.py; tests/unit/predict/data/yolo26n_bccd_val_conf0.01.json) over
// the 87 bccd val images: YOLO26n's end-to-end head, its top-k and no NMS, on each CPU forward.
TEST_CASE("YOLO26n predictions on the bccd val images equal Ultralytics 8.4's", "[predict][yolo26]") {
  const fs::path best = fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics" / "bccd_yolo26n" / "best.pt";
  if (!fs::exists(best) || !fs::exists(kImages)) {
    WARN("skipped: " << best.string() << " or the bccd images are absent");
    return;
  }
  // end2end=False: Ultralytics' predictor on the one-to-many branch with NMS (the script's
  // `end2end=False` argument).
  for (const bool end2end : {true, false}) {
    const auto ref = nlohmann::json::parse(
        std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests" / "unit" / "predict" / "data" /
                      (end2end ? "yolo26n_bccd_val_conf0.01.json" : "yolo26n_bccd_val_conf0.01_end2end_false.json")));
    REQUIRE(ref["boxes"].size() == 87);
    for (const std::string forward : {"libtorch", "auto"}) {
      PredictOptions o = at320();
      o.conf = 0.01;
      o.forward = forward;
      o.end2end = end2end;
      Predictor predictor(best, o);
      INFO("end2end " << end2end << ", forward " << predictor.forward());
      std::size_t boxes = 0;
      for (const auto& [file, expected] : ref["boxes"].items()) {
        INFO(file);
        const Prediction p = predictor.predict(yolotrain::data::decode_image(kImages / file));
        REQUIRE(p.boxes.size() == expected.size());
        for (std::size_t i = 0; i < p.boxes.size(); ++i) {
          const Detection& d = p.boxes[i];
          const auto& e = expected[i];
          CHECK(std::abs(d.x1 - e[0].get<float>()) <= 0.1f);
          CHECK(std::abs(d.y1 - e[1].get<float>()) <= 0.1f);
          CHECK(std::abs(d.x2 - e[2].get<float>()) <= 0.1f);
          CHECK(std::abs(d.y2 - e[3].get<float>()) <= 0.1f);
          CHECK(std::abs(d.conf - e[4].get<float>()) <= 1e-3f);
          CHECK(d.cls == e[5].get<int64_t>());
        }
        boxes += p.boxes.size();
      }
      CHECK(boxes == (end2end ? 2122u : 2777u));
    }
  }
}
