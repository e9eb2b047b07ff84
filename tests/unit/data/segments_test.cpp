// Polygon labels through the data pipeline: Ultralytics 8.4.117's resample_segments and
// segment2box computed by Ultralytics itself (scripts/ultralytics84_segments.py ->
// data/ultralytics84_segments.json), and a segmentation loader on coco128-seg (masks with every
// batch, their order, determinism).
#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "catch.hpp"

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/segments.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using nlohmann::json;
using yolotrain::test::shared_dataset;

namespace {

const json& segments_reference() {
  static const json ref = json::parse(
      std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/data/data/ultralytics84_segments.json"));
  return ref;
}

LoaderOptions seg_options(int workers, bool overlap) {
  LoaderOptions o;
  o.batch = 4, o.imgsz = 160, o.workers = workers, o.seed = 5, o.epochs = 10, o.close_mosaic = 2;
  o.hyp.degrees = 10, o.hyp.mixup = 0.3, o.hyp.flipud = 0.5;  // every path that moves outlines
  o.mask_ratio = 4, o.overlap_mask = overlap;
  return o;
}

// The train split of ../shared/datasets/<name>, scanned without a cache; nothing (after saying so)
// when the shared datasets are absent.
std::optional<Dataset> shared_train_split(const std::string& name) {
  const fs::path root = shared_dataset(name);
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return std::nullopt;
  }
  ScanOptions scan;
  scan.use_cache = false;
  return load_split(load_data_yaml(root / "data.yaml"), "train", scan);
}

}  // namespace

TEST_CASE("resample_segment gives Ultralytics 8.4's 1000 points, float for float", "[data][segments]") {
  for (const auto& [name, c] : segments_reference()["resample"].items()) {
    INFO(name);
    const auto mine = resample_segment(c["in"].get<std::vector<float>>(), 1000);
    const auto ref = c["out"].get<std::vector<float>>();
    REQUIRE(mine.size() == ref.size());
    CHECK(mine == ref);
  }
}

TEST_CASE("segment_box gives Ultralytics 8.4's segment2box: vertices, border crossings, corners", "[data][segments]") {
  for (const auto& [name, c] : segments_reference()["segment2box"].items()) {
    INFO(name);
    const auto box = segment_box(c["in"].get<std::vector<double>>(), 100, 80);
    const auto ref = c["box"].get<std::vector<double>>();
    for (int k = 0; k < 4; ++k) CHECK(box[k] == Approx(ref[k]).margin(1e-9));
  }
}

TEST_CASE("a segmentation loader gives masks in its boxes' order, the same for any number of workers",
          "[data][segments][loader]") {
  const std::optional<Dataset> split = shared_train_split("coco128-seg");
  if (!split) return;
  const Dataset& train = *split;
  for (const bool overlap : {true, false}) {
    INFO((overlap ? "overlap masks" : "one mask per box"));
    Loader a(train, seg_options(0, overlap)), b(train, seg_options(2, overlap));
    for (int epoch : {0, 9}) {  // mosaic, then closed
      a.seek(epoch), b.seek(epoch);
      for (int k = 0; k < 3; ++k) {
        const auto x = a.next(), y = b.next();
        REQUIRE((x && y));
        REQUIRE(x->masks.defined());
        CHECK(at::equal(x->masks, y->masks));
        CHECK(at::equal(x->sem_masks, y->sem_masks));
        CHECK(at::equal(x->bboxes, y->bboxes));
        const int64_t n = x->bboxes.size(0);
        CHECK(x->sem_masks.sizes() == at::IntArrayRef({4, 40, 40}));
        if (overlap) {
          CHECK(x->masks.sizes() == at::IntArrayRef({4, 40, 40}));
        } else {
          CHECK(x->masks.sizes() == at::IntArrayRef({n, 40, 40}));
        }
        // Each instance's mask pixels lie in its box (within a mask pixel): the boxes follow the masks.
        int64_t first = 0;
        for (int64_t i = 0; i < 4; ++i) {
          const at::Tensor mine = x->batch_idx == static_cast<float>(i);
          const int64_t count = mine.sum().item<int64_t>();
          for (int64_t j = 0; j < count; ++j) {
            const at::Tensor box = x->bboxes[first + j] * 40;  // xywh in mask pixels
            const at::Tensor m = overlap ? (x->masks[i] == static_cast<float>(j + 1)) : (x->masks[first + j] > 0);
            const at::Tensor where = m.nonzero();
            if (where.size(0) == 0) continue;  // a sliver that the downsampling lost
            const float cx = box[0].item<float>(), cy = box[1].item<float>();
            const float hw = box[2].item<float>() / 2 + 1.5f, hh = box[3].item<float>() / 2 + 1.5f;
            CHECK(where.select(1, 1).to(at::kFloat).sub(cx - 0.5f).abs().max().item<float>() <= hw);
            CHECK(where.select(1, 0).to(at::kFloat).sub(cy - 0.5f).abs().max().item<float>() <= hh);
          }
          first += count;
        }
      }
    }
  }
}

TEST_CASE("a segmentation loader refuses box labels with the reason", "[data][segments][loader]") {
  const std::optional<Dataset> train = shared_train_split("coco8");
  if (!train) return;
  Loader loader(*train, seg_options(0, true));
  loader.seek(0);
  CHECK_THROWS_WITH(loader.next(), Catch::Contains("segmentation needs polygon labels"));
}
