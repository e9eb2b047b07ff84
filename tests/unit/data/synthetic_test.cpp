#include "catch.hpp"

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
