#include "catch.hpp"

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::TempDir;
using yolotrain::test::write_text;

TEST_CASE("data.yaml: relative path resolves against the YAML folder", "[data][yaml]") {
  TempDir dir;
  fs::create_directories(dir / "ds/images/train");
  write_text(dir / "ds/cfg/data.yaml", "path: ..\ntrain: images/train\nval: [images/train, list.txt]\nnames: [a, b]\n");
  const DataConfig cfg = load_data_yaml(dir / "ds/cfg/data.yaml");
  CHECK(cfg.root == (dir.path() / "ds").lexically_normal());
  REQUIRE(cfg.splits.at("val").size() == 2);
  CHECK(cfg.splits.at("train")[0] == (dir.path() / "ds/images/train").lexically_normal());
  CHECK(cfg.nc() == 2);
  CHECK_FALSE(cfg.has("test"));
}

TEST_CASE("data.yaml: names as a map and nc checked", "[data][yaml]") {
  TempDir dir;
  write_text(dir / "a.yaml", "train: x\nval: y\nnc: 2\nnames:\n  0: cat\n  1: dog\n");
  const DataConfig cfg = load_data_yaml(dir / "a.yaml");
  CHECK(cfg.root == dir.path());
  CHECK(cfg.names == std::vector<std::string>{"cat", "dog"});
  write_text(dir / "b.yaml", "train: x\nval: y\nnc: 3\nnames: [cat, dog]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "b.yaml"), Catch::Contains("does not match the 2 names"));
  write_text(dir / "c.yaml", "train: x\nval: y\nnames:\n  0: cat\n  2: dog\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "c.yaml"), Catch::Contains("id 1 is missing"));
  write_text(dir / "d.yaml", "train: x\nnames: [a]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "d.yaml"), Catch::Contains("'train' and 'val' are required"));
  write_text(dir / "e.yaml", "path: nowhere-at-all\ntrain: x\nval: y\nnames: [a]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "e.yaml"), Catch::Contains("nowhere-at-all"));
  CHECK_THROWS_AS(load_data_yaml(dir / "missing.yaml"), yolotrain::Error);
}

TEST_CASE("list_images reads folders and txt lists and maps labels", "[data][yaml]") {
  TempDir dir;
  write_text(dir / "images/train/b.jpg", "x");
  write_text(dir / "images/train/sub/a.PNG", "x");
  write_text(dir / "images/train/notes.md", "x");
  write_text(dir / "list.txt", "images/train/b.jpg\n\n" + (dir / "images/train/sub/a.PNG").string() + "\n");
  const auto from_dir = list_images({dir / "images/train"});
  REQUIRE(from_dir.size() == 2);
  CHECK(from_dir[0].filename() == "b.jpg");
  const auto from_txt = list_images({dir / "list.txt"});
  CHECK(from_txt.size() == 2);
  CHECK_THROWS_WITH(list_images({dir / "nope"}), Catch::Contains("nope"));
  CHECK(label_path_for("/d/images/x/images/train/a.jpg") == fs::path("/d/images/x/labels/train/a.txt"));
}

TEST_CASE("data.yaml: a pose dataset's kpt_shape and flip_idx, checked as Ultralytics' pose trainer does",
          "[data][yaml]") {
  TempDir dir;
  write_text(dir / "pose.yaml", "train: x\nval: y\nnames: [person]\nkpt_shape: [4, 3]\nflip_idx: [1, 0, 3, 2]\n");
  const DataConfig cfg = load_data_yaml(dir / "pose.yaml");
  REQUIRE(cfg.kpt_shape);
  CHECK((*cfg.kpt_shape)[0] == 4);
  CHECK((*cfg.kpt_shape)[1] == 3);
  CHECK(cfg.flip_idx == std::vector<int>{1, 0, 3, 2});
  write_text(dir / "nokpt.yaml", "train: x\nval: y\nnames: [person]\n");
  CHECK_FALSE(load_data_yaml(dir / "nokpt.yaml").kpt_shape);
  write_text(dir / "dims.yaml", "train: x\nval: y\nnames: [a]\nkpt_shape: [17, 4]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "dims.yaml"), Catch::Contains("i.e. 'kpt_shape: [17, 3]'"));
  write_text(dir / "one.yaml", "train: x\nval: y\nnames: [a]\nkpt_shape: 17\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "one.yaml"), Catch::Contains("'kpt_shape' must be a list"));
  write_text(dir / "len.yaml", "train: x\nval: y\nnames: [a]\nkpt_shape: [4, 2]\nflip_idx: [1, 0, 2]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "len.yaml"), Catch::Contains("must be equal to kpt_shape[0]=4"));
  write_text(dir / "perm.yaml", "train: x\nval: y\nnames: [a]\nkpt_shape: [3, 2]\nflip_idx: [0, 0, 2]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "perm.yaml"), Catch::Contains("every keypoint 0..2 once"));
  write_text(dir / "flip.yaml", "train: x\nval: y\nnames: [a]\nflip_idx: [0]\n");
  CHECK_THROWS_WITH(load_data_yaml(dir / "flip.yaml"), Catch::Contains("'flip_idx' without 'kpt_shape'"));
}
