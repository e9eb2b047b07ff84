// Pose data (issue 53): label rows with keypoints checked as Ultralytics 8.4.117's verify_image_label
// checks them, the labels cache keeping them (under a name apart from Ultralytics' own cache), the
// augmentations carrying them (Instances.clip's invisibility, RandomFlip's flip_idx), the loader's
// keypoints tensor, and the built-in shapes-pose set.
#include <ATen/ATen.h>

#include "catch.hpp"

#include <algorithm>
#include <cmath>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/synthetic.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::has_problem;
using yolotrain::test::no_cache;
using yolotrain::test::pattern_image;
using yolotrain::test::shared_dataset;
using yolotrain::test::slurp;
using yolotrain::test::TempDir;
using yolotrain::test::write_jpeg;
using yolotrain::test::write_text;

namespace {

bool has_warning(const ScanReport& r, const std::string& text) {
  return std::any_of(r.warnings.begin(), r.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

/// A one-box Labelled on pattern_image (whose pixel (x, y) is coloured 255 x / w, 255 y / h) with
/// keypoints at `points` (pixels, visible).
Labelled pose_sample(int h, int w, const std::vector<std::pair<float, float>>& points) {
  Labelled s{pattern_image(h, w), {}};
  PixelBox b;
  b.x1 = 20, b.y1 = 20, b.x2 = static_cast<float>(w - 20), b.y2 = static_cast<float>(h - 20);
  for (const auto& [x, y] : points) b.keypoints.insert(b.keypoints.end(), {x, y, 2.f});
  s.boxes.push_back(b);
  return s;
}

}  // namespace

TEST_CASE("pose labels: rows with keypoints are read as Ultralytics reads them, bad ones named per file",
          "[data][pose]") {
  TempDir dir;
  const fs::path im = dir / "images/train", lb = dir / "labels/train";
  for (const char* n : {"good", "cols", "far", "neg", "box", "dup"}) write_jpeg(im / (std::string(n) + ".jpg"));
  write_text(lb / "good.txt", "1 0.5 0.5 0.4 0.4 0.3 0.4 2 0.7 0.6 0\n0 0.2 0.2 0.2 0.2 0.15 0.15 1 0.25 0.2 2\n");
  write_text(lb / "cols.txt", "0 0.5 0.5 0.4 0.4 0.3 0.4 2 0.7 0.6\n");
  write_text(lb / "far.txt", "0 0.5 0.5 0.4 0.4 0.3 1.2 2 0.7 0.6 2\n");
  write_text(lb / "neg.txt", "0 0.5 0.5 0.4 0.4 0.3 0.4 -1 0.7 0.6 2\n");
  write_text(lb / "box.txt", "0 0.5 0.5 0.4 0.4\n");
  write_text(lb / "dup.txt", "0 0.5 0.5 0.4 0.4 0.3 0.4 2 0.7 0.6 2\n0 0.5 0.5 0.4 0.4 0.3 0.4 2 0.7 0.6 2\n"
                             "0 0.5 0.5 0.4 0.4 0.3 0.4 2 0.7 0.6 1\n");
  write_text(dir / "data.yaml",
             "path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\nkpt_shape: [2, 3]\nflip_idx: [1, 0]\n");
  const Dataset ds = load_split(load_data_yaml(dir / "data.yaml"), "train", no_cache());
  REQUIRE(ds.kpt_shape);
  CHECK(*ds.kpt_shape == std::array<int, 2>{2, 3});
  const ScanReport& r = ds.report;
  CHECK(has_problem(r, "cols.txt", "line 1: 10 columns; pose labels of kpt_shape [2, 3] require 11 each"));
  CHECK(has_problem(r, "far.txt", "line 1: keypoint 0 at 1.2: non-normalized or out of bounds coordinates"));
  CHECK(has_problem(r, "neg.txt", "line 1: keypoint 0: negative coordinate or visibility -1"));
  CHECK(has_problem(r, "box.txt", "line 1: 5 columns; pose labels of kpt_shape [2, 3] require 11 each"));
  REQUIRE(ds.records.size() == 2);
  const ImageRecord& dup = ds.records[0];  // sorted by path: dup, good
  CHECK(dup.boxes.size() == 2);            // the exact repeat removed, the row of another visibility kept
  CHECK(r.duplicates == 1);
  const ImageRecord& good = ds.records[1];
  REQUIRE(good.keypoints.size() == 2);
  CHECK(good.boxes[0].cls == 1);
  CHECK(good.keypoints[0] == std::vector<float>{0.3f, 0.4f, 2.f, 0.7f, 0.6f, 0.f});
  CHECK(good.keypoints[1] == std::vector<float>{0.15f, 0.15f, 1.f, 0.25f, 0.2f, 2.f});
}

TEST_CASE("pose labels: two numbers per keypoint get Ultralytics' visibility, negative x or y invisible",
          "[data][pose]") {
  TempDir dir;
  write_jpeg(dir / "images/train/a.jpg");
  write_text(dir / "labels/train/a.txt", "0 0.5 0.5 0.4 0.4 0.3 0.4 -0.005 0.6 0 0\n");
  const LabelFile f = read_label_file(dir / "labels/train/a.txt", 1, 0.01f, std::array<int, 2>{3, 2});
  CHECK(f.problem.empty());
  REQUIRE(f.keypoints.size() == 1);
  CHECK(f.keypoints[0] == std::vector<float>{0.3f, 0.4f, 1.f, -0.005f, 0.6f, 0.f, 0.f, 0.f, 1.f});
  // Without kpt_shape the same row would be a 5-point polygon (as Ultralytics' detect trainer reads it).
  const LabelFile polygon = read_label_file(dir / "labels/train/a.txt", 1);
  CHECK(polygon.keypoints.empty());
  CHECK(polygon.segments.size() == 1);
}

TEST_CASE("pose labels: coco8-pose's keypoints, kept by the labels cache", "[data][pose]") {
  const fs::path root = shared_dataset("coco8-pose");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  TempDir dir;
  const DataConfig cfg = load_data_yaml(root / "data.yaml");
  ScanOptions opt;
  opt.cache_path = dir / "val.cache";
  const Dataset val = load_split(cfg, "val", opt);
  CHECK_FALSE(val.report.from_cache);
  CHECK(val.report.corrupt.empty());
  std::size_t instances = val.boxes() + load_split(cfg, "train", no_cache()).boxes();
  CHECK(instances == 21);  // PROVENANCE.md
  for (const auto& rec : val.records) {
    REQUIRE(rec.keypoints.size() == rec.boxes.size());
    for (const auto& k : rec.keypoints) CHECK(k.size() == 17 * 3);
  }
  const Dataset again = load_split(cfg, "val", opt);
  CHECK(again.report.from_cache);
  REQUIRE(again.records.size() == val.records.size());
  for (std::size_t i = 0; i < val.records.size(); ++i) CHECK(again.records[i].keypoints == val.records[i].keypoints);
  // The same files read as boxes make another cache key: never the pose records for a detection scan.
  const auto images = list_images(cfg.splits.at("val"));
  CHECK(scan_cache_key(images, 1, 0.01f) != scan_cache_key(images, 1, 0.01f, std::array<int, 2>{17, 3}));
}

TEST_CASE("labels cache: a name of its own beside Ultralytics' cache, which is left alone, and an old one of ours goes",
          "[data][scan]") {
  TempDir dir;
  write_jpeg(dir / "images/train/a.jpg");
  write_text(dir / "labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n");
  write_text(dir / "data.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [a]\n");
  const DataConfig cfg = load_data_yaml(dir / "data.yaml");
  const std::string ultralytics = std::string("\x80\x04\x95", 3) + "an Ultralytics pickle";  // its cache's start
  write_text(dir / "labels/train.cache", ultralytics);
  const Dataset first = load_split(cfg, "train");
  CHECK(fs::exists(dir / "labels/train.yolotrain.cache"));
  CHECK(slurp(dir / "labels/train.cache") == ultralytics);
  CHECK(load_split(cfg, "train").report.from_cache);
  CHECK(slurp(dir / "labels/train.cache") == ultralytics);
  // A cache an earlier yolotrain wrote at Ultralytics' place: removed, with a warning naming it.
  fs::copy_file(dir / "labels/train.yolotrain.cache", dir / "labels/train.cache",
                fs::copy_options::overwrite_existing);
  const Dataset after = load_split(cfg, "train");
  CHECK_FALSE(fs::exists(dir / "labels/train.cache"));
  CHECK(has_warning(after.report, "a labels cache of an older yolotrain at Ultralytics' place"));
  CHECK(after.report.from_cache);
}

TEST_CASE("augment: keypoints follow their pixels through random_perspective, those pushed out become invisible",
          "[data][augment][pose]") {
  AugmentConfig cfg;
  cfg.degrees = 20, cfg.scale = 0.3, cfg.shear = 3, cfg.translate = 0.1;
  const int h = 160, w = 240;
  const std::vector<std::pair<float, float>> points = {{60, 50}, {180, 40}, {120, 80}, {50, 130}, {200, 120}};
  int checked = 0, hidden = 0;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    Labelled s = pose_sample(h, w, points);
    Rng rng(seed, 0, 0);
    random_perspective(s, cfg, rng, seed % 2 ? 0 : -40);  // the mosaic's border too
    if (s.boxes.empty()) continue;
    const auto& k = s.boxes[0].keypoints;
    REQUIRE(k.size() == points.size() * 3);
    for (std::size_t j = 0; j < points.size(); ++j) {
      const float x = k[3 * j], y = k[3 * j + 1];
      CHECK((x >= 0 && x <= s.image.width && y >= 0 && y <= s.image.height));
      if (k[3 * j + 2] == 0) {
        ++hidden;
        continue;
      }
      const int px = std::min(static_cast<int>(x), s.image.width - 1);
      const int py = std::min(static_cast<int>(y), s.image.height - 1);
      const std::uint8_t* p = s.image.pixel(py, px);
      INFO("seed " << seed << " keypoint " << j << " at " << x << "," << y);
      CHECK(std::abs(p[0] - 255.0 * points[j].first / w) < 8);  // pattern_image's colour of the source point
      CHECK(std::abs(p[1] - 255.0 * points[j].second / h) < 8);
      ++checked;
    }
  }
  CHECK(checked > 20);
  CHECK(hidden > 0);  // some landed outside, marked invisible and clipped
}

TEST_CASE("augment: a flip mirrors keypoints and reorders them by flip_idx, in both directions",
          "[data][augment][pose]") {
  AugmentConfig cfg;
  cfg.fliplr = 1, cfg.flipud = 0, cfg.flip_idx = {1, 0, 2};
  Labelled s = pose_sample(100, 200, {{30, 40}, {150, 60}, {100, 10}});
  Rng rng(1, 0, 0);
  random_flip(s, cfg, rng);
  CHECK(s.boxes[0].keypoints == std::vector<float>{50, 60, 2, 170, 40, 2, 100, 10, 2});
  cfg.fliplr = 0, cfg.flipud = 1;  // Ultralytics reorders by flip_idx after a vertical flip as well
  random_flip(s, cfg, rng);
  CHECK(s.boxes[0].keypoints == std::vector<float>{170, 60, 2, 50, 40, 2, 100, 90, 2});
}

TEST_CASE("augment: a mosaic carries keypoints, clipping those off its canvas as invisible", "[data][augment][pose]") {
  std::vector<Labelled> four;
  for (int i = 0; i < 4; ++i) four.push_back(pose_sample(64, 64, {{32, 32}, {2, 2}, {62, 62}}));
  Rng rng(3, 0, 0);
  const Labelled m = mosaic4(four, 64, rng);
  int visible = 0;
  for (const PixelBox& b : m.boxes) {
    REQUIRE(b.keypoints.size() == 9);
    for (std::size_t j = 0; j < 9; j += 3) {
      CHECK((b.keypoints[j] >= 0 && b.keypoints[j] <= 128 && b.keypoints[j + 1] >= 0 && b.keypoints[j + 1] <= 128));
      visible += b.keypoints[j + 2] > 0;
    }
  }
  CHECK(visible >= 3);
  Labelled lb = pose_sample(50, 100, {{10, 20}});
  letterbox(lb, 64, 64);  // scale 0.64, 16 px pad above and below
  CHECK(lb.boxes[0].keypoints[0] == Approx(6.4f));
  CHECK(lb.boxes[0].keypoints[1] == Approx(20 * 0.64f + 16));
}

TEST_CASE("shapes-pose: boxes with exact keypoints, a pose data.yaml, and a loader that batches them",
          "[data][synthetic][pose]") {
  TempDir dir;
  ShapesOptions o;
  o.keypoints = true, o.train = 6, o.val = 2, o.imgsz = 96;
  const fs::path yaml = write_shapes_dataset(dir.path(), o);
  const DataConfig cfg = load_data_yaml(yaml);
  REQUIRE(cfg.kpt_shape);
  CHECK(*cfg.kpt_shape == std::array<int, 2>{5, 3});
  CHECK(cfg.flip_idx == std::vector<int>{0, 1, 2, 4, 3});
  const Dataset train = load_split(cfg, "train", no_cache());
  CHECK(train.report.corrupt.empty());
  for (const auto& rec : train.records) {
    for (std::size_t i = 0; i < rec.boxes.size(); ++i) {
      const Box& b = rec.boxes[i];
      const std::vector<float>& k = rec.keypoints[i];
      const float e = 2e-6f;  // 6 decimals
      CHECK(k[0] == Approx(b.x).margin(e));          // centre
      CHECK(k[1] == Approx(b.y).margin(e));
      CHECK(k[4] == Approx(b.y - b.h / 2).margin(e));  // top
      CHECK(k[7] == Approx(b.y + b.h / 2).margin(e));  // bottom
      CHECK(k[9] == Approx(b.x - b.w / 2).margin(e));  // left
      CHECK(k[12] == Approx(b.x + b.w / 2).margin(e));  // right
      for (std::size_t j = 2; j < k.size(); j += 3) CHECK(k[j] == 2.f);
    }
  }
  LoaderOptions lo;
  lo.batch = 3, lo.imgsz = 96, lo.workers = 0, lo.seed = 4;
  lo.hyp.flip_idx = cfg.flip_idx;
  Loader zero(train, lo);
  lo.workers = 2;
  Loader two(train, lo);
  zero.seek(0), two.seek(0);
  const auto a = zero.next(), b = two.next();
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(a->keypoints.defined());
  CHECK(a->keypoints.sizes() == at::IntArrayRef({a->bboxes.size(0), 5, 3}));
  CHECK(at::equal(a->keypoints, b->keypoints));
  const at::Tensor xy = a->keypoints.slice(2, 0, 2);
  CHECK((xy >= 0).all().item<bool>());
  CHECK((xy <= 1).all().item<bool>());
}
