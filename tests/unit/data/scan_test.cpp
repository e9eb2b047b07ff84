#include "catch.hpp"

#include <algorithm>
#include <cmath>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::has_problem;
using yolotrain::test::no_cache;
using yolotrain::test::shared_dataset;
using yolotrain::test::TempDir;
using yolotrain::test::write_jpeg;
using yolotrain::test::write_text;

TEST_CASE("scan: coco128 counts match PROVENANCE.md", "[data][scan]") {
  const fs::path root = shared_dataset("coco128");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  const DataConfig cfg = load_data_yaml(root / "data.yaml");
  const Dataset train = load_split(cfg, "train", no_cache());
  CHECK(train.report.images == 103);
  CHECK(train.report.backgrounds == 2);
  CHECK(train.report.boxes == 817);
  CHECK(train.report.corrupt.empty());
  CHECK(train.report.boxes_per_class[0] == 234);
  CHECK(train.report.boxes_per_class[41] == 35);
  CHECK(train.report.summary() == "103 images, 2 backgrounds, 0 corrupt, 0 duplicates removed");
  const Dataset val = load_split(cfg, "val", no_cache());
  CHECK(val.report.images == 25);
  CHECK(val.report.backgrounds == 0);
  CHECK(val.report.boxes == 112);
  CHECK(val.report.boxes_per_class[54] == 13);
}

TEST_CASE("scan: bccd counts match PROVENANCE.md", "[data][scan]") {
  const fs::path root = shared_dataset("bccd");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  const DataConfig cfg = load_data_yaml(root / "data.yaml");
  const std::size_t images[] = {205, 87, 72}, boxes[] = {2804, 1137, 945};
  const std::size_t rbc[] = {2381, 967, 805}, wbc[] = {214, 87, 71}, plt[] = {209, 83, 69};
  int i = 0;
  for (const char* split : {"train", "val", "test"}) {
    const Dataset ds = load_split(cfg, split, no_cache());
    INFO(split);
    CHECK(ds.report.images == images[i]);
    CHECK(ds.report.boxes == boxes[i]);
    CHECK(ds.report.backgrounds == 0);
    CHECK(ds.report.warnings.empty());  // 6-decimal rounding at the border is not "clipping"
    CHECK(ds.report.boxes_per_class == std::vector<std::size_t>{rbc[i], wbc[i], plt[i]});
    CHECK(ds.records.front().width == 640);
    CHECK(ds.records.front().height == 480);
    ++i;
  }
}

TEST_CASE("scan: labels round-trip through the cache", "[data][scan]") {
  const fs::path root = shared_dataset("coco8");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  TempDir dir;
  const DataConfig cfg = load_data_yaml(root / "data.yaml");
  ScanOptions opt;
  opt.cache_path = dir / "train.cache";
  const Dataset first = load_split(cfg, "train", opt);
  CHECK_FALSE(first.report.from_cache);
  REQUIRE(fs::exists(dir / "train.cache"));
  const Dataset second = load_split(cfg, "train", opt);
  CHECK(second.report.from_cache);
  REQUIRE(second.records.size() == first.records.size());
  for (std::size_t i = 0; i < first.records.size(); ++i) {
    CHECK(second.records[i].image == first.records[i].image);
    CHECK((second.records[i].boxes == first.records[i].boxes));  // whole: Box has no operator<<
    CHECK(second.records[i].width == first.records[i].width);
  }
  CHECK(second.report.summary() == first.report.summary());
  CHECK(second.report.boxes == 13);
  // The default cache location (beside the read-only labels folder) costs a warning only.
  const Dataset ro = load_split(cfg, "train");
  CHECK(ro.report.images == 4);
}

TEST_CASE("scan: corrupt images and bad label files are skipped with reasons", "[data][scan]") {
  TempDir dir;
  const fs::path im = dir / "images/train", lb = dir / "labels/train";
  for (const char* n : {"good", "dup", "clip", "bg", "four", "cls", "far", "nan", "degen"})
    write_jpeg(im / (std::string(n) + ".jpg"));
  write_text(lb / "good.txt", "0 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n");
  write_text(lb / "dup.txt", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n2 0.5 0.5 0.2 0.2\n");
  write_text(lb / "clip.txt", "1 0.5 0.5 1.005 0.2\n");
  write_text(lb / "bg.txt", "");
  write_text(lb / "four.txt", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2\n");
  write_text(lb / "cls.txt", "3 0.5 0.5 0.2 0.2\n");
  write_text(lb / "far.txt", "0 1.2 0.5 0.2 0.2\n");
  write_text(lb / "nan.txt", "0 nan 0.5 0.2 0.2\n");
  write_text(lb / "degen.txt", "0 0.5 0.5 0 0.2\n");
  // A truncated JPEG and a zero-byte PNG.
  const auto bytes = yolotrain::data::encode_jpeg(yolotrain::test::pattern_image(64, 96), 90);
  yolotrain::data::write_bytes(im / "trunc.jpg",
                               std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  write_text(im / "zero.png", "");
  write_text(im / "fake.png", "GIF89a not a png at all");
  write_text(dir / "data.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [a, b, c]\n");

  ScanOptions opt;
  opt.cache_path = dir / "cache";
  const Dataset ds = load_split(load_data_yaml(dir / "data.yaml"), "train", opt);
  const ScanReport& r = ds.report;
  CHECK(r.images == 4);
  CHECK(r.backgrounds == 1);
  CHECK(r.duplicates == 1);
  CHECK(r.boxes == 2 + 2 + 1);
  CHECK(r.corrupt.size() == 8);
  CHECK(r.summary() == "4 images, 1 backgrounds, 8 corrupt, 1 duplicates removed");
  CHECK(has_problem(r, "four.txt", "line 2: 4 columns"));
  CHECK(has_problem(r, "cls.txt", "line 1: class 3 is not an integer in [0, 3)"));
  CHECK(has_problem(r, "far.txt", "out of [0, 1]"));
  CHECK(has_problem(r, "nan.txt", "not a finite number"));
  CHECK(has_problem(r, "degen.txt", "degenerate"));
  CHECK(has_problem(r, "trunc.jpg", "corrupt JPEG"));
  CHECK(has_problem(r, "zero.png", "empty file"));
  CHECK(has_problem(r, "fake.png", "unsupported image format"));
  const auto clipped = std::find_if(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("clip.txt: 1 box(es)") != std::string::npos;
  });
  CHECK(clipped != r.warnings.end());
  const auto& clip = *std::find_if(ds.records.begin(), ds.records.end(),
                                   [](const ImageRecord& rec) { return rec.image.filename() == "clip.jpg"; });
  CHECK(clip.boxes[0].w == Approx(1.0f));
  CHECK(clip.boxes[0].x == Approx(0.5f));
  // From the cache: the same report.
  const Dataset again = load_split(load_data_yaml(dir / "data.yaml"), "train", opt);
  CHECK(again.report.from_cache);
  CHECK(again.report.summary() == r.summary());
  CHECK(again.report.corrupt.size() == r.corrupt.size());
  // A changed label file invalidates the cache.
  write_text(lb / "bg.txt", "2 0.5 0.5 0.3 0.3\n");
  const Dataset changed = load_split(load_data_yaml(dir / "data.yaml"), "train", opt);
  CHECK_FALSE(changed.report.from_cache);
  CHECK(changed.report.backgrounds == 0);
}

TEST_CASE("scan: a split without usable images is an error naming the folder", "[data][scan]") {
  TempDir dir;
  write_text(dir / "images/train/a.jpg", "");
  fs::create_directories(dir / "images/empty");
  write_text(dir / "data.yaml", "train: images/train\nval: images/empty\nnames: [a]\n");
  const DataConfig cfg = load_data_yaml(dir / "data.yaml");
  CHECK_THROWS_WITH(load_split(cfg, "train", no_cache()),
                    Catch::Contains("no usable image") && Catch::Contains("images/train"));
  CHECK_THROWS_WITH(load_split(cfg, "val", no_cache()),
                    Catch::Contains("has no images") && Catch::Contains("images/empty"));
}

TEST_CASE("scan: a damaged or cut labels cache is never trusted, a changed image invalidates it", "[data][scan]") {
  TempDir dir;
  const fs::path im = dir / "images/train", lb = dir / "labels/train";
  for (int i = 0; i < 5; ++i) {
    write_jpeg(im / (std::to_string(i) + ".jpg"));
    write_text(lb / (std::to_string(i) + ".txt"), "1 0.5 0.5 0.25 0.25\n0 0.25 0.25 0.125 0.125\n");
  }
  write_text(dir / "data.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\n");
  const DataConfig cfg = load_data_yaml(dir / "data.yaml");
  const fs::path cache = dir / "labels/train.yolotrain.cache";  // the default place, beside Ultralytics' own
  const Dataset fresh = load_split(cfg, "train");
  REQUIRE_FALSE(fresh.report.from_cache);
  REQUIRE(fs::exists(cache));
  const std::string whole = yolotrain::test::slurp(cache);

  auto same_as_fresh = [&](const Dataset& ds) {
    REQUIRE(ds.records.size() == fresh.records.size());
    for (std::size_t i = 0; i < ds.records.size(); ++i) CHECK((ds.records[i].boxes == fresh.records[i].boxes));
  };
  // One byte of a box changed (a class 1 -> 3 would still parse): the checksum rejects it.
  std::string damaged = whole;
  damaged[damaged.size() - 30] ^= 0x01;
  write_text(cache, damaged);
  const Dataset after_damage = load_split(cfg, "train");
  CHECK_FALSE(after_damage.report.from_cache);
  same_as_fresh(after_damage);
  CHECK(yolotrain::test::slurp(cache) == whole);  // scanned again and rewritten
  // Cut short, or empty.
  for (std::size_t keep : {whole.size() / 2, std::size_t{0}}) {
    write_text(cache, whole.substr(0, keep));
    const Dataset cut = load_split(cfg, "train");
    CHECK_FALSE(cut.report.from_cache);
    same_as_fresh(cut);
  }
  CHECK(load_split(cfg, "train").report.from_cache);
  // An image rewritten (same name, other pixels and size) and an image added: scanned again.
  write_jpeg(im / "2.jpg", 48, 80);
  const Dataset changed = load_split(cfg, "train");
  CHECK_FALSE(changed.report.from_cache);
  CHECK(changed.records[2].width == 80);
  write_jpeg(im / "5.jpg");
  const Dataset added = load_split(cfg, "train");
  CHECK_FALSE(added.report.from_cache);
  CHECK(added.records.size() == 6);
}

// Ultralytics' verify_image_label: a file with a line longer than 6 columns holds polygons, each
// box is its polygon's bounding box (segments2boxes); coco128-seg describes coco128's instances.
TEST_CASE("scan: coco128-seg's polygons give coco128's boxes, and the cache keeps them", "[data][scan]") {
  const fs::path seg_root = shared_dataset("coco128-seg"), det_root = shared_dataset("coco128");
  if (seg_root.empty() || det_root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  TempDir dir;
  ScanOptions opt;
  opt.cache_path = dir / "val.cache";
  const Dataset seg = load_split(load_data_yaml(seg_root / "data.yaml"), "val", opt);
  const Dataset det = load_split(load_data_yaml(det_root / "data.yaml"), "val", no_cache());
  CHECK(seg.report.images == 25);
  CHECK(seg.report.boxes == 112);  // PROVENANCE.md
  CHECK(seg.report.corrupt.empty());
  REQUIRE(seg.records.size() == det.records.size());
  for (std::size_t i = 0; i < seg.records.size(); ++i) {
    const ImageRecord &s = seg.records[i], &d = det.records[i];
    REQUIRE(s.boxes.size() == d.boxes.size());
    REQUIRE(s.segments.size() == s.boxes.size());
    CHECK(d.segments.empty());
    for (std::size_t k = 0; k < s.boxes.size(); ++k) {
      CHECK(s.boxes[k].cls == d.boxes[k].cls);
      CHECK(s.boxes[k].w == Approx(d.boxes[k].w).margin(2e-3));  // IoU >= 0.9997 (PROVENANCE.md)
      CHECK(s.boxes[k].x == Approx(d.boxes[k].x).margin(2e-3));
      const auto& p = s.segments[k];
      REQUIRE(p.size() >= 6);
      float x1 = 1, x2 = 0;
      for (std::size_t j = 0; j < p.size(); j += 2) x1 = std::min(x1, p[j]), x2 = std::max(x2, p[j]);
      CHECK(s.boxes[k].w == Approx(x2 - x1).margin(1e-6));
    }
  }
  const Dataset again = load_split(load_data_yaml(seg_root / "data.yaml"), "val", opt);
  CHECK(again.report.from_cache);
  for (std::size_t i = 0; i < seg.records.size(); ++i) CHECK(again.records[i].segments == seg.records[i].segments);
}

TEST_CASE("scan: bad polygon label files are skipped with the reason", "[data][scan]") {
  TempDir dir;
  const fs::path im = dir / "images/train", lb = dir / "labels/train";
  for (const char* n : {"tri", "odd", "one", "box", "far", "cls"}) write_jpeg(im / (std::string(n) + ".jpg"));
  write_text(lb / "tri.txt", "1 0.1 0.1 0.5 0.1 0.3 0.6\n0 0.6 0.6 0.9 0.6 0.9 0.9 0.6 0.9\n");
  write_text(lb / "odd.txt", "0 0.1 0.1 0.5 0.1 0.3 0.6 0.2\n");
  write_text(lb / "one.txt", "0 0.1 0.1 0.5 0.1 0.3 0.6\n0 0.1 0.1\n");
  write_text(lb / "box.txt", "0 0.1 0.1 0.5 0.1 0.3 0.6\n1 0.5 0.5 0.2 0.2\n");
  write_text(lb / "far.txt", "0 0.1 0.1 1.5 0.1 0.3 0.6\n");
  write_text(lb / "cls.txt", "7 0.1 0.1 0.5 0.1 0.3 0.6\n");
  write_text(dir / "data.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [a, b, c]\n");
  const Dataset ds = load_split(load_data_yaml(dir / "data.yaml"), "train", no_cache());
  const ScanReport& r = ds.report;
  CHECK(r.images == 1);
  CHECK(has_problem(r, "odd.txt", "line 1: 7 coordinates after the class, an odd number"));
  CHECK(has_problem(r, "one.txt", "line 2: a polygon needs at least 3 points, got 1"));
  CHECK(has_problem(r, "box.txt", "line 2: 5 columns, a box (class x_center y_center width height) or a 2-point "
                                  "polygon among polygons"));
  CHECK(has_problem(r, "far.txt", "line 1: point 2 out of [0, 1]"));
  CHECK(has_problem(r, "cls.txt", "class 7"));
  REQUIRE(ds.records.size() == 1);
  const ImageRecord& tri = ds.records[0];
  REQUIRE(tri.boxes.size() == 2);
  CHECK(tri.boxes[0].cls == 1);
  CHECK(tri.boxes[0].x == Approx(0.3f));
  CHECK(tri.boxes[0].y == Approx(0.35f));
  CHECK(tri.boxes[0].w == Approx(0.4f));
  CHECK(tri.boxes[0].h == Approx(0.5f));
  CHECK(tri.segments[0] == std::vector<float>{0.1f, 0.1f, 0.5f, 0.1f, 0.3f, 0.6f});
  CHECK(tri.segments[1].size() == 8);
}

TEST_CASE("scan: a split mixing polygon and box label files keeps the boxes and drops the polygons, saying so",
          "[data][scan]") {
  TempDir dir;
  const fs::path im = dir / "images/train", lb = dir / "labels/train";
  for (const char* n : {"poly", "box"}) write_jpeg(im / (std::string(n) + ".jpg"));
  write_text(lb / "poly.txt", "0 0.1 0.1 0.5 0.1 0.3 0.6\n");
  write_text(lb / "box.txt", "1 0.5 0.5 0.2 0.2\n");
  write_text(dir / "data.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\n");
  const Dataset ds = load_split(load_data_yaml(dir / "data.yaml"), "train", no_cache());
  CHECK(ds.report.boxes == 2);
  for (const auto& r : ds.records) CHECK(r.segments.empty());
  CHECK(std::any_of(ds.report.warnings.begin(), ds.report.warnings.end(), [](const std::string& w) {
    return w.find("got 1 polygons and 2 boxes: only the boxes will be used") != std::string::npos;
  }));
}
