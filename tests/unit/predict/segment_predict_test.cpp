// Predicted masks against Ultralytics 8.4.117's own SegmentationPredictor
// (scripts/ultralytics84_seg_predict.py -> data/ultralytics84_shapes_seg_predict*.json) of a
// YOLOv8n-seg its own trainer wrote on shapes-seg (scripts/ultralytics84_train.py, 30 epochs at
// 160 px), at imgsz 224 and conf 0.01, on three shapes-seg images and a COCO one (letterboxed with
// padding). The checkpoint is Ultralytics' file and stays out of the project: the test reads
// shapesseg_yolov8n-seg/best.pt from $YOLOTRAIN_SEG_WEIGHTS or ../shared/weights/ultralytics, checks
// its SHA-256, and says so and skips when neither has it.
#include "yolotrain/predict/predictor.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "test_support.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"

namespace fs = std::filesystem;
using yolotrain::predict::Detection;
using yolotrain::predict::PredictOptions;
using yolotrain::predict::Predictor;

namespace {

fs::path seg_weights() {
  std::vector<fs::path> places = {fs::path(YOLOTRAIN_SHARED_DIR) / "weights/ultralytics/shapesseg_yolov8n-seg"};
  if (const char* dir = std::getenv("YOLOTRAIN_SEG_WEIGHTS"))
    places.insert(places.begin(), fs::path(dir) / "shapesseg_yolov8n-seg");
  for (const auto& p : places) {
    if (fs::exists(p / "best.pt")) return p / "best.pt";
  }
  return {};
}

fs::path image_file(const std::string& name) {
  for (const char* set : {"shapes-seg", "coco128-seg"}) {
    const fs::path p = fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / set / "images" / "val" / name;
    if (fs::exists(p)) return p;
  }
  return {};
}

// The reference's run-length mask ([gap, length, ...]) as 0/1 bytes of `size`.
std::vector<std::uint8_t> decode_runs(const nlohmann::json& runs, std::size_t size) {
  std::vector<std::uint8_t> m(size, 0);
  std::size_t at = 0;
  for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
    at += runs[i].get<std::size_t>();
    const std::size_t n = runs[i + 1].get<std::size_t>();
    std::fill(m.begin() + static_cast<long>(at), m.begin() + static_cast<long>(at + n), 1);
    at += n;
  }
  return m;
}

double iou(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  std::size_t inter = 0, uni = 0;
  for (std::size_t i = 0; i < a.size(); ++i) inter += a[i] && b[i], uni += a[i] || b[i];
  return uni ? double(inter) / double(uni) : 1.0;
}

void compare_with_reference(const std::string& reference, bool retina) {
  const fs::path ref_file = fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/predict/data" / reference;
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(ref_file));
  const fs::path best = seg_weights();
  if (best.empty()) {
    WARN("skipped: no shapesseg_yolov8n-seg/best.pt in $YOLOTRAIN_SEG_WEIGHTS nor ../shared/weights/ultralytics "
         "(make it with scripts/ultralytics84_train.py)");
    return;
  }
  REQUIRE(yolotrain::lifecycle::sha256_hex(yolotrain::test::slurp(best)) == ref["checkpoint_sha256"]);
  PredictOptions o;
  o.imgsz_h = o.imgsz_w = ref["imgsz"].get<std::int64_t>();
  o.conf = 0.01;
  o.device = "cpu";
  o.retina_masks = retina;
  Predictor predictor(best, o);
  std::size_t compared = 0;
  double worst = 1.0;
  for (const auto& image : ref["images"]) {
    const fs::path file = image_file(image["file"]);
    if (file.empty()) {
      WARN("skipped " << image["file"].get<std::string>() << ": not in ../shared/datasets");
      continue;
    }
    INFO(file.string());
    const auto p = predictor.predict(file);
    const auto& want = image["detections"];
    REQUIRE(p.boxes.size() == want.size());
    const std::size_t pixels = static_cast<std::size_t>(p.orig_h) * static_cast<std::size_t>(p.orig_w);
    for (std::size_t i = 0; i < want.size(); ++i) {
      const Detection& d = p.boxes[i];
      INFO("detection " << i);
      CHECK(d.cls == want[i]["cls"].get<std::int64_t>());
      CHECK(d.conf == Approx(want[i]["conf"].get<double>()).margin(1e-4));
      const float xyxy[] = {d.x1, d.y1, d.x2, d.y2};
      for (int k = 0; k < 4; ++k) CHECK(xyxy[k] == Approx(want[i]["xyxy"][k].get<double>()).margin(0.01));
      REQUIRE(d.mask.size() == pixels);
      const double m = iou(d.mask, decode_runs(want[i]["mask"], pixels));
      CHECK(m >= 0.99);
      worst = std::min(worst, m);
      // The outline: as many points, each within a pixel (the masks it was traced on may differ
      // by a pixel at an edge).
      const auto& xy = want[i]["xy"];
      if (d.polygon.size() == xy.size()) {
        for (std::size_t k = 0; k < xy.size(); ++k) CHECK(d.polygon[k] == Approx(xy[k].get<double>()).margin(1.0));
      } else {
        CHECK(m < 1.0);  // a different outline only where the masks differ
      }
      ++compared;
    }
  }
  WARN(compared << " masks compared, the lowest IoU " << worst);
}

}  // namespace

TEST_CASE("predicted masks are Ultralytics' SegmentationPredictor's (IoU >= 0.99 at conf 0.01)", "[predict][segment]") {
  compare_with_reference("ultralytics84_shapes_seg_predict.json", false);
}

TEST_CASE("retina_masks: masks computed at the image's size are Ultralytics' too", "[predict][segment]") {
  compare_with_reference("ultralytics84_shapes_seg_predict_retina.json", true);
}
