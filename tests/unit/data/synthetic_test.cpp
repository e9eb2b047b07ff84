#include "catch.hpp"

#include <algorithm>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/synthetic.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::slurp;
using yolotrain::test::TempDir;

TEST_CASE("synthetic: the shapes dataset is deterministic and valid", "[data][synthetic]") {
  TempDir a, b, c;
  ShapesOptions o;
  o.seed = 11, o.train = 5, o.val = 3, o.imgsz = 96;
  write_shapes_dataset(a.path(), o);
  write_shapes_dataset(b.path(), o);
  o.seed = 12;
  write_shapes_dataset(c.path(), o);
  for (const char* f : {"images/train/000003.jpg", "labels/train/000003.txt", "images/val/000002.jpg", "data.yaml"})
    CHECK(slurp(a / f) == slurp(b / f));
  CHECK(slurp(a / "images/train/000003.jpg") != slurp(c / "images/train/000003.jpg"));
  ScanOptions so;
  so.use_cache = false;
  const DataConfig cfg = load_data_yaml(a / "data.yaml");
  CHECK(cfg.names == std::vector<std::string>{"rectangle", "ellipse", "triangle", "cross"});
  const Dataset train = load_split(cfg, "train", so);
  CHECK(train.report.images == 5);
  CHECK(train.report.corrupt.empty());
  CHECK(train.report.boxes >= 5);
  CHECK(train.records[0].width == 96);
  CHECK(load_split(cfg, "val", so).report.images == 3);
}

TEST_CASE("synthetic: shapes-seg labels each shape with the polygon it was filled from", "[data][synthetic]") {
  TempDir a, b;
  ShapesOptions o;
  o.seed = 11, o.train = 6, o.val = 2, o.imgsz = 96, o.segments = true;
  write_shapes_dataset(a.path(), o);
  write_shapes_dataset(b.path(), o);
  CHECK(slurp(a / "labels/train/000003.txt") == slurp(b / "labels/train/000003.txt"));
  CHECK(slurp(a / "images/train/000003.jpg") == slurp(b / "images/train/000003.jpg"));
  ScanOptions so;
  so.use_cache = false;
  const Dataset train = load_split(load_data_yaml(a / "data.yaml"), "train", so);
  CHECK(train.report.images == 6);
  CHECK(train.report.corrupt.empty());
  CHECK(train.report.warnings.empty());
  const std::size_t points[] = {4, 32, 3, 12};  // rectangle, ellipse, triangle, cross
  for (const ImageRecord& r : train.records) {
    REQUIRE(r.segments.size() == r.boxes.size());
    for (std::size_t k = 0; k < r.boxes.size(); ++k) {
      CHECK(r.segments[k].size() == 2 * points[r.boxes[k].cls]);
      float x1 = 1, x2 = 0;
      for (std::size_t i = 0; i < r.segments[k].size(); i += 2)
        x1 = std::min(x1, r.segments[k][i]), x2 = std::max(x2, r.segments[k][i]);
      CHECK(r.boxes[k].w == Approx(x2 - x1).margin(1e-6));
    }
  }
}
