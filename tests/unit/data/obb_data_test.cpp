// Oriented-box data (issue 55): the labels' corners (or polygons) made rotated boxes as Ultralytics
// 8.4.117 makes them (utils/ops.py xyxyxyxy2xywhr, cv2.minAreaRect; scripts/ultralytics84_obb_labels.py
// -> data/ultralytics84_obb_labels.json), the loader's OBB batches (its YOLODataset(task="obb") samples
// without augmentation; augmented ones keep every box canonical), and the built-in shapes-obb set.
#include <ATen/ATen.h>

#include "catch.hpp"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/rotated_boxes.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::no_cache;
using yolotrain::test::TempDir;

namespace obb_data_test {

const nlohmann::json& labels_reference() {
  static const nlohmann::json ref = nlohmann::json::parse(
      std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/data/data/ultralytics84_obb_labels.json"));
  return ref;
}

LoaderOptions plain(int imgsz) {
  LoaderOptions o;
  o.batch = 1, o.imgsz = imgsz, o.workers = 0, o.augment = false, o.shuffle = false, o.obb = true;
  return o;
}

}  // namespace obb_data_test

using namespace obb_data_test;

TEST_CASE("outline_xywhr gives Ultralytics' rotated box of corners and of polygons", "[data][obb]") {
  const auto& ref = labels_reference();
  for (std::size_t i = 0; i < ref["outlines"].size(); ++i) {
    const std::vector<float> outline = ref["outlines"][i].get<std::vector<float>>();
    const std::vector<double> theirs = ref["xywhr"][i].get<std::vector<double>>();
    const std::array<float, 5> mine = outline_xywhr(outline);
    INFO("outline " << i);
    for (int k = 0; k < 5; ++k) CHECK(mine[k] == Approx(theirs[k]).margin(1e-5));
    CHECK(mine[2] >= mine[3]);  // the width is the longer side
    CHECK(mine[4] >= -M_PI / 4 - 1e-6);
    CHECK(mine[4] < 3 * M_PI / 4);
  }
  const std::array<float, 8> k = xywhr_corners({50, 40, 30, 12, 0});  // Ultralytics' corner order
  CHECK(std::vector<float>(k.begin(), k.end()) == std::vector<float>{65, 46, 65, 34, 35, 34, 35, 46});
}

TEST_CASE("an OBB loader's samples equal Ultralytics' YOLODataset(task=obb) without augmentation",
          "[data][obb]") {
  TempDir dir;
  const fs::path yaml = write_shapes_dataset(dir.path(), shapes_obb_options());
  const Dataset val = load_split(load_data_yaml(yaml), "val", no_cache());
  Loader loader(val, plain(160));
  for (const auto& sample : labels_reference()["samples"]) {
    const auto b = loader.next();
    REQUIRE(b);
    INFO(b->im_file[0]);
    CHECK(fs::path(b->im_file[0]).filename().string() == sample["im_file"].get<std::string>());
    CHECK(b->img.size(2) == sample["shape"][0].get<int64_t>());
    const auto theirs = sample["bboxes"].get<std::vector<std::vector<double>>>();
    REQUIRE(b->bboxes.size(0) == static_cast<int64_t>(theirs.size()));
    REQUIRE(b->bboxes.size(1) == 5);
    for (std::size_t j = 0; j < theirs.size(); ++j)
      for (int k = 0; k < 5; ++k) CHECK(b->bboxes[int64_t(j)][k].item<double>() == Approx(theirs[j][k]).margin(2e-6));
    CHECK(b->targets.size(2) == 6);  // class, xywh, angle
  }
}

TEST_CASE("augmented OBB batches keep every box canonical and inside the image", "[data][obb]") {
  TempDir dir;
  ShapesOptions o = shapes_obb_options();
  o.train = 8, o.val = 2, o.imgsz = 96;
  const Dataset train = load_split(load_data_yaml(write_shapes_dataset(dir.path(), o)), "train", no_cache());
  LoaderOptions opt = plain(96);
  opt.augment = true, opt.batch = 4, opt.hyp.degrees = 45;
  Loader loader(train, opt);
  int64_t boxes = 0;
  while (auto b = loader.next()) {
    REQUIRE(b->bboxes.size(1) == 5);
    const at::Tensor r = b->bboxes;
    boxes += r.size(0);
    CHECK((r.select(1, 2) >= r.select(1, 3) - 1e-6).all().item<bool>());  // w >= h (square images)
    CHECK((r.select(1, 4) >= -M_PI / 4 - 1e-6).all().item<bool>());
    CHECK((r.select(1, 4) < 3 * M_PI / 4).all().item<bool>());
    CHECK((r.slice(1, 0, 2) >= -0.05).all().item<bool>());  // the outlines are clipped to the image
    CHECK((r.slice(1, 0, 2) <= 1.05).all().item<bool>());
  }
  CHECK(boxes > 0);
}

TEST_CASE("an OBB loader refuses a label that is an upright box, naming the image", "[data][obb]") {
  TempDir dir;
  ShapesOptions o;  // the plain shapes set: upright boxes
  o.train = 2, o.val = 1, o.imgsz = 64;
  const Dataset train = load_split(load_data_yaml(write_shapes_dataset(dir.path(), o)), "train", no_cache());
  Loader loader(train, plain(64));
  CHECK_THROWS_WITH(loader.next(), Catch::Contains("without its outline") && Catch::Contains(".jpg"));
}

TEST_CASE("shapes-obb: elongated shapes turned at any angle, labelled with their exact corners",
          "[data][synthetic][obb]") {
  TempDir dir;
  ShapesOptions o = shapes_obb_options();
  o.train = 6, o.val = 2;
  const Dataset train = load_split(load_data_yaml(write_shapes_dataset(dir.path(), o)), "train", no_cache());
  CHECK(train.report.corrupt.empty());
  std::size_t turned = 0;
  for (const auto& rec : train.records) {
    REQUIRE(rec.segments.size() == rec.boxes.size());
    for (const auto& corners : rec.segments) {
      REQUIRE(corners.size() == 8);  // class x1 y1 .. x4 y4
      std::vector<float> px(corners);
      for (float& v : px) v *= static_cast<float>(o.imgsz);
      const float ax = px[2] - px[0], ay = px[3] - px[1], bx = px[6] - px[0], by = px[7] - px[1];
      CHECK(std::abs(ax * bx + ay * by) < 0.05f * std::hypot(ax, ay) * std::hypot(bx, by));  // a right angle
      const std::array<float, 5> r = outline_xywhr(px);
      CHECK(r[2] >= 0.24f * o.imgsz - 1);
      CHECK(r[3] <= 0.8f * r[2] + 1);
      turned += std::abs(std::remainder(r[4], M_PI / 2)) > 0.05;
    }
  }
  CHECK(turned > train.boxes() / 2);  // most are not upright
  CHECK_THROWS_AS(
      [] {
        ShapesOptions both = shapes_obb_options();
        both.segments = true;
        TempDir d;
        write_shapes_dataset(d.path(), both);
      }(),
      yolotrain::Error);
}
