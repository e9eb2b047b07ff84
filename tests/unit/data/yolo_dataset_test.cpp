#include "catch.hpp"

#include "data_test_support.hpp"
#include "image_bombs.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::test;

namespace {

/// Runs yolo_dataset with `args`; returns (exit code, output). `peak_rss_kb`: its peak memory.
std::pair<int, std::string> run(const std::vector<std::string>& args, const TempDir& dir,
                                long* peak_rss_kb = nullptr) {
  std::vector<std::string> argv{YOLO_DATASET_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  Child child = spawn(argv, dir / "out.txt");
  const auto code = wait_exit(child, std::chrono::seconds(60));
  REQUIRE(code.has_value());
  if (peak_rss_kb != nullptr) *peak_rss_kb = child.peak_rss_kb;
  return {*code, slurp(dir / "out.txt")};
}

}  // namespace

TEST_CASE("yolo_dataset: shapes then check", "[data][yolo_dataset]") {
  TempDir dir;
  auto [code, out] =
      run({"shapes", (dir / "ds").string(), "--seed", "5", "--train", "6", "--val", "2", "--imgsz", "96"}, dir);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("6 train, 2 val"));
  CHECK(fs::exists(dir / "ds/images/train/000005.jpg"));
  std::tie(code, out) = run({"check", (dir / "ds/data.yaml").string()}, dir);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("split    images  backgrounds  corrupt  duplicates    boxes"));
  CHECK_THAT(out, Catch::Contains("train         6            0        0           0"));
  CHECK_THAT(out, Catch::Contains("OK: every split is usable"));
  CHECK_FALSE(fs::exists(dir / "ds/labels/train.yolotrain.cache"));  // check writes nothing
}

TEST_CASE("yolo_dataset: check reports corrupt files and unusable splits", "[data][yolo_dataset]") {
  TempDir dir;
  write_jpeg(dir / "images/train/a.jpg");
  write_text(dir / "labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n");
  write_jpeg(dir / "images/train/b.jpg");
  write_text(dir / "labels/train/b.txt", "0 0.5 0.5 0.2\n");
  write_text(dir / "images/val/c.jpg", "");
  write_text(dir / "data.yaml", "train: images/train\nval: images/val\nnames: [thing]\n");
  const auto [code, out] = run({"check", (dir / "data.yaml").string()}, dir);
  CHECK(code == 1);
  CHECK_THAT(out, Catch::Contains("train         1            0        1           1        1"));
  CHECK_THAT(out, Catch::Contains("b.txt: line 1: 4 columns"));
  CHECK_THAT(out, Catch::Contains("c.jpg: empty file"));
  CHECK_THAT(out, Catch::Contains("split 'val' is unusable"));
  CHECK_THAT(out, Catch::Contains("FAILED"));
}

TEST_CASE("yolo_dataset: coco128 check matches PROVENANCE.md", "[data][yolo_dataset]") {
  const fs::path root = shared_dataset("coco128");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  TempDir dir;
  const auto [code, out] = run({"check", (root / "data.yaml").string()}, dir);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("train       103            2        0           0      817"));
  CHECK_THAT(out, Catch::Contains("val          25            0        0           0      112"));
  CHECK_THAT(out, Catch::Contains("   0 person                    234       20"));
  const auto [bad, usage] = run({"nonsense"}, dir);
  CHECK(bad == 2);
  CHECK_THAT(usage, Catch::Contains("usage: yolo_dataset check"));
}

TEST_CASE("yolo_dataset: check names image bombs as corrupt without decoding them", "[data][yolo_dataset]") {
  TempDir dir;
  for (const char* stem : {"a", "b"}) {
    write_jpeg(dir / "images/train" / (std::string(stem) + ".jpg"));
    write_text(dir / "labels/train" / (std::string(stem) + ".txt"), "0 0.5 0.5 0.2 0.2\n");
  }
  write_png_bomb(dir / "images/train/bomb.png", 40000, 40000);
  write_jpeg_bomb(dir / "images/train/bomb.jpg", 40000, 40000);
  write_jpeg(dir / "images/val/c.jpg");
  write_text(dir / "data.yaml", "train: images/train\nval: images/val\nnames: [thing]\n");
  long peak_kb = 0;
  const auto [code, out] = run({"check", (dir / "data.yaml").string()}, dir, &peak_kb);
  INFO(out);
  WARN("yolo_dataset check over two image bombs: peak RSS " << peak_kb / 1024 << " MB");
  CHECK(code == 0);  // as for other corrupt files: the split is still usable
  CHECK_THAT(out, Catch::Contains("train         2            0        2           0        2"));
  CHECK_THAT(out, Catch::Contains("bomb.png: image size 40000x40000 (1600000000 pixels) exceeds the limit"));
  CHECK_THAT(out, Catch::Contains("bomb.jpg: image size 40000x40000 (1600000000 pixels) exceeds the limit"));
  CHECK(peak_kb > 0);
  CHECK(peak_kb < 512 * 1024);  // blindly decoded, one bomb alone is 4.6 GB
}
