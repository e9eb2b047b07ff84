// data::copy_paste against Ultralytics 8.4.117's own CopyPaste (modes "flip" and "mixup") on a fixed sample
// (scripts/ultralytics84_copy_paste.py -> data/ultralytics84_copy_paste.json): the same instances
// pasted (boxes, classes, outlines) and the same image, byte for byte under the OpenCV that drew the
// reference (Debian 12's 4.6: cv::drawContours rasterises a polygon's edge; OpenCV 4.10 puts a
// pixel or two differently, which Ultralytics on 4.10 would do too).
#include <ATen/ATen.h>
#include <opencv2/core/version.hpp>

#include "yolotrain/data/augment.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace yd = yolotrain::data;

namespace {

// The script's sample (or, `source`, mode "mixup"'s other sample): its image formula and polygons.
yd::Labelled reference_sample(const nlohmann::json& ref, bool source = false) {
  const int h = ref["height"], w = ref["width"];
  const int a = source ? 11 : 7, b_ = source ? 5 : 13, c_ = source ? 47 : 29;
  yd::Labelled s{yd::Image(h, w), {}};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) s.image.pixel(y, x)[c] = static_cast<std::uint8_t>((a * x + b_ * y + c_ * c) % 256);
    }
  }
  const auto& polygons = ref[source ? "source_polygons" : "polygons"];
  for (std::size_t i = 0; i < polygons.size(); ++i) {
    yd::PixelBox b;
    b.cls = ref[source ? "source_cls" : "cls"][i];
    b.x1 = b.y1 = 1e9F;
    b.x2 = b.y2 = -1e9F;
    for (const auto& pt : polygons[i]) {
      const float x = pt[0].get<float>(), y = pt[1].get<float>();
      b.segment.push_back(x), b.segment.push_back(y);
      b.x1 = std::min(b.x1, x), b.y1 = std::min(b.y1, y), b.x2 = std::max(b.x2, x), b.y2 = std::max(b.y2, y);
    }
    s.boxes.push_back(b);
  }
  return s;
}

}  // namespace

TEST_CASE("copy_paste pastes the instances Ultralytics' CopyPaste pastes (flip and mixup), pixel for pixel",
          "[data][segment]") {
  const nlohmann::json ref = nlohmann::json::parse(
      std::ifstream(std::string(YOLOTRAIN_SOURCE_DIR) + "/tests/unit/data/data/ultralytics84_copy_paste.json"));
  for (const auto& c : ref["cases"]) {
    const double p = c["p"];
    const bool mixup = c["mode"] == "mixup";
    INFO(c["mode"].get<std::string>() << " p " << p);
    yd::Labelled s = reference_sample(ref);
    const yd::Labelled before = s, source = reference_sample(ref, true);
    yd::copy_paste(s, p, mixup ? &source : nullptr);
    REQUIRE(s.boxes.size() == c["boxes"].size());
    for (std::size_t i = 0; i < s.boxes.size(); ++i) {
      const auto& b = s.boxes[i];
      const auto& want = c["boxes"][i];
      CHECK(b.cls == static_cast<int>(c["cls"][i].get<double>()));
      CHECK(b.x1 == want[0].get<float>());
      CHECK(b.y1 == want[1].get<float>());
      CHECK(b.x2 == want[2].get<float>());
      CHECK(b.y2 == want[3].get<float>());
      CHECK(b.segment[0] == c["first_points"][i][0].get<float>());
      CHECK(b.segment[1] == c["first_points"][i][1].get<float>());
    }
    const bool reference_opencv = ref["opencv"] == CV_VERSION;
    const std::string bytes(reinterpret_cast<const char*>(s.image.pixels.data()), s.image.pixels.size());
    if (reference_opencv) CHECK(yolotrain::lifecycle::sha256_hex(bytes) == c["image_sha256"]);
    std::size_t changed = 0;
    for (int y = 0; y < s.image.height; ++y) {
      for (int x = 0; x < s.image.width; ++x) {
        const auto* a = s.image.pixel(y, x);
        const auto* o = before.image.pixel(y, x);
        changed += a[0] != o[0] || a[1] != o[1] || a[2] != o[2];
      }
    }
    const auto want = c["changed_pixels"].get<std::size_t>();
    INFO(changed << " pixels pasted, the reference's " << want << " (OpenCV " << CV_VERSION << ", the reference's "
                 << ref["opencv"].get<std::string>() << ")");
    CHECK((reference_opencv ? changed == want : changed + 2 >= want && changed <= want + 2));
  }
  // Nothing to paste: p 0, or box labels without outlines.
  yd::Labelled boxes_only = reference_sample(ref);
  for (auto& b : boxes_only.boxes) b.segment.clear();
  yd::copy_paste(boxes_only, 1.0);
  CHECK(boxes_only.boxes.size() == 4);
  yd::Labelled off = reference_sample(ref);
  yd::copy_paste(off, 0.0);
  CHECK(off.boxes.size() == 4);
}
