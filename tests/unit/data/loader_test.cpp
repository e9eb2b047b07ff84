#include <ATen/ATen.h>

#include "catch.hpp"

#include <chrono>
#include <cmath>
#include <set>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::TempDir;

namespace {

/// A small shapes dataset (train 22, val 9 images of 160 px) in a temporary folder.
struct Shapes {
  TempDir dir;
  Dataset train, val;
  Shapes() {
    ShapesOptions o;
    o.seed = 7, o.train = 22, o.val = 9, o.imgsz = 160;
    const DataConfig cfg = load_data_yaml(write_shapes_dataset(dir.path(), o));
    train = load_split(cfg, "train");
    val = load_split(cfg, "val");
  }
};

Shapes& shapes() {
  static Shapes s;
  return s;
}

LoaderOptions train_options(int workers) {
  LoaderOptions o;
  o.batch = 4, o.imgsz = 128, o.workers = workers, o.seed = 3, o.epochs = 10, o.close_mosaic = 2;
  o.hyp.degrees = 5, o.hyp.mixup = 0.3;  // exercise every random path
  return o;
}

std::vector<Batch> read_epoch(Loader& loader) {
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

bool same(const Batch& a, const Batch& b) {
  return a.img.sizes() == b.img.sizes() && at::equal(a.img, b.img) && at::equal(a.batch_idx, b.batch_idx) &&
         at::equal(a.cls, b.cls) && at::equal(a.bboxes, b.bboxes) && a.im_file == b.im_file;
}

}  // namespace

TEST_CASE("loader: batches are byte-identical for 0 1 2 and 4 workers", "[data][loader]") {
  Loader reference(shapes().train, train_options(0));
  reference.seek(1);
  const auto expected = read_epoch(reference);
  REQUIRE(expected.size() == 6);
  CHECK(expected.back().img.size(0) == 2);  // 22 = 5*4 + 2: the last batch is short
  CHECK(expected[0].img.sizes() == at::IntArrayRef({4, 3, 128, 128}));
  CHECK(expected[0].img.scalar_type() == at::kByte);  // Ultralytics' collate: uint8 RGB
  const at::Tensor as_float = preprocess_images(expected[0].img, at::kCPU);
  CHECK(as_float.scalar_type() == at::kFloat);
  CHECK(as_float.max().item<float>() <= 1.0f);
  CHECK(at::equal(as_float.mul(255).round().to(at::kByte), expected[0].img));
  CHECK(expected[0].bboxes.size(1) == 4);
  CHECK(expected[0].cls.size(1) == 1);
  for (int workers : {1, 2, 4}) {
    Loader loader(shapes().train, train_options(workers));
    loader.seek(1);
    const auto got = read_epoch(loader);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("workers " << workers << " batch " << i);
      CHECK(same(got[i], expected[i]));
    }
  }
}

namespace {

/// Sample `position` built alone (no cache of any kind), as a batch's uint8 RGB CHW image.
at::Tensor alone(const Dataset& ds, const LoaderOptions& o, int epoch, std::size_t position) {
  const Labelled s = make_sample(ds, o, epoch, position);
  const at::Tensor hwc = at::from_blob(const_cast<std::uint8_t*>(s.image.pixels.data()),
                                       {s.image.height, s.image.width, 3}, at::kByte);
  return hwc.flip({2}).permute({2, 0, 1}).contiguous();
}

}  // namespace

TEST_CASE("loader: mosaic partners reused from memory give the pixels of a sample built alone", "[data][loader]") {
  // batch 1: the partner window is 8 positions and the loader keeps 13 images, fewer than the
  // 22 of the set, so images are reused, evicted and decoded again during each epoch.
  for (int workers : {0, 1, 2}) {
    LoaderOptions o = train_options(workers);
    o.batch = 1;
    Loader loader(shapes().train, o);
    for (int epoch : {0, 1}) {
      loader.seek(epoch);
      std::size_t p = 0;
      while (auto b = loader.next()) {
        INFO("workers " << workers << " epoch " << epoch << " position " << p);
        CHECK(at::equal(b->img[0], alone(shapes().train, o, epoch, p)));
        ++p;
      }
      CHECK(p == 22);
    }
  }
}

// Ultralytics 8.4's Mosaic draws partners from the buffer of recently loaded images, but from the
// whole dataset with cache=ram (data/augment.py:479-499). Each record's boxes here carry its index as
// their class, so a mosaic's classes say which records it holds.
TEST_CASE("loader: mosaic partners come from the recent window, or from any record with partners_from_all",
          "[data][loader]") {
  Dataset ds = shapes().train;
  for (std::size_t r = 0; r < ds.records.size(); ++r) {
    for (auto& box : ds.records[r].boxes) box.cls = static_cast<int>(r);
  }
  ds.names.resize(ds.records.size(), "x");
  for (const bool from_all : {false, true}) {
    LoaderOptions o = train_options(0);
    o.batch = 1;  // a window of 8 positions over 22 records
    o.hyp.mixup = 0, o.hyp.degrees = 0;
    o.cache_ram = true;
    o.partners_from_all = from_all;
    const std::vector<std::size_t> order = Loader(ds, o).order(0);
    std::size_t outside = 0;
    for (std::size_t p = 0; p < order.size(); ++p) {
      const std::size_t first = p + 1 >= 8 ? p + 1 - 8 : 0;
      std::set<std::size_t> window(order.begin() + first, order.begin() + first + 8);
      for (const auto& box : make_sample(ds, o, 0, p).boxes) outside += window.count(std::size_t(box.cls)) == 0;
    }
    CAPTURE(from_all);
    CHECK((outside > 0) == from_all);
  }
}

TEST_CASE("loader: seek gives the same batches as reading from the start", "[data][loader]") {
  Loader full(shapes().train, train_options(2));
  full.seek(2);
  const auto expected = read_epoch(full);
  Loader resumed(shapes().train, train_options(2));
  resumed.seek(2, 3);
  const auto got = read_epoch(resumed);
  REQUIRE(got.size() == expected.size() - 3);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].index == expected[i + 3].index);
    CHECK(same(got[i], expected[i + 3]));
  }
  // Seeking back while workers are busy discards their work.
  resumed.seek(2, 0);
  CHECK(same(*resumed.next(), expected[0]));
}

TEST_CASE("loader: two epochs differ and close_mosaic turns mosaic off", "[data][loader]") {
  Loader loader(shapes().train, train_options(2));
  const auto e0 = read_epoch(loader);
  loader.seek(1);
  const auto e1 = read_epoch(loader);
  CHECK(loader.order(0) != loader.order(1));
  CHECK_FALSE(at::equal(e0[0].img, e1[0].img));
  CHECK(loader.mosaic_enabled(7));
  CHECK_FALSE(loader.mosaic_enabled(8));
  loader.seek(9);
  CHECK(read_epoch(loader).size() == 6);
}

TEST_CASE("loader: boxes stay normalized and inside the image", "[data][loader]") {
  Loader loader(shapes().train, train_options(2));
  std::int64_t boxes = 0;
  for (const auto& b : read_epoch(loader)) {
    boxes += b.bboxes.size(0);
    if (b.bboxes.size(0) == 0) continue;
    CHECK(b.bboxes.min().item<float>() >= 0.0f);
    CHECK(b.bboxes.max().item<float>() <= 1.0f);
    CHECK(b.batch_idx.max().item<float>() < b.img.size(0));
  }
  CHECK(boxes > 20);
}

TEST_CASE("loader: the padded targets hold each image's boxes in order, then zeros", "[data][loader]") {
  CHECK(padded_target_rows(0) == 8);
  CHECK(padded_target_rows(8) == 8);
  CHECK(padded_target_rows(9) == 16);
  CHECK(padded_target_rows(100) == 128);
  Loader loader(shapes().train, train_options(2));
  for (const auto& b : read_epoch(loader)) {
    const std::int64_t images = b.img.size(0);
    REQUIRE(b.targets.dim() == 3);
    CHECK(b.targets.size(0) == images);
    CHECK(b.targets.size(2) == 5);
    std::int64_t most = 0;
    for (std::int64_t i = 0; i < images; ++i) {
      const at::Tensor mine = (b.batch_idx == float(i)).nonzero().view(-1);
      const std::int64_t n = mine.size(0);
      most = std::max(most, n);
      CHECK(at::equal(b.targets[i].slice(0, 0, n), at::cat({b.cls.index({mine}), b.bboxes.index({mine})}, 1)));
      CHECK(b.targets[i].slice(0, n).abs().sum().item<float>() == 0.0f);
    }
    CHECK(b.targets.size(1) == padded_target_rows(most));
  }
}

TEST_CASE("loader: rect validation batches and ratio_pad map labels back", "[data][loader]") {
  const fs::path root = yolotrain::test::shared_dataset("coco128");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  ScanOptions so;
  so.use_cache = false;
  const Dataset val = load_split(load_data_yaml(root / "data.yaml"), "val", so);
  LoaderOptions o;
  o.batch = 8, o.imgsz = 320, o.augment = false, o.rect = true, o.shuffle = false, o.workers = 2;
  Loader loader(val, o);
  double last_ar = 0;
  std::size_t images = 0;
  for (const auto& b : read_epoch(loader)) {
    const int H = static_cast<int>(b.img.size(2)), W = static_cast<int>(b.img.size(3));
    CHECK(H % 32 == 0);
    CHECK(W % 32 == 0);
    CHECK(std::max(H, W) <= 352);
    std::int64_t row = 0;
    for (std::size_t i = 0; i < b.im_file.size(); ++i, ++images) {
      const auto [h0, w0] = b.ori_shape[i];
      const double ar = double(h0) / w0;
      CHECK(ar >= last_ar);
      last_ar = ar;
      const auto& rec = *std::find_if(val.records.begin(), val.records.end(),
                                      [&](const ImageRecord& r) { return r.image.string() == b.im_file[i]; });
      const auto& rp = b.ratio_pad[i];
      for (const Box& box : rec.boxes) {
        REQUIRE(row < b.bboxes.size(0));
        CHECK(b.batch_idx[row].item<float>() == float(i));
        const float x = b.bboxes[row][0].item<float>() * W, y = b.bboxes[row][1].item<float>() * H;
        CHECK(std::abs((x - rp.pad_x) / rp.ratio_w - box.x * w0) < 1.0);
        CHECK(std::abs((y - rp.pad_y) / rp.ratio_h - box.y * h0) < 1.0);
        ++row;
      }
    }
    CHECK(row == b.bboxes.size(0));
  }
  CHECK(images == 25);
}

TEST_CASE("loader: a worker's error reaches the caller with the file name", "[data][loader]") {
  TempDir dir;
  ShapesOptions so;
  so.train = 6, so.val = 1, so.imgsz = 64;
  const DataConfig cfg = load_data_yaml(write_shapes_dataset(dir.path(), so));
  ScanOptions no_cache;
  no_cache.use_cache = false;
  const Dataset ds = load_split(cfg, "train", no_cache);
  yolotrain::test::write_text(ds.records[4].image, "broken after the scan");
  for (int workers : {0, 2}) {
    LoaderOptions o = train_options(workers);
    o.imgsz = 64, o.batch = 2, o.shuffle = false, o.hyp.mosaic = 0, o.hyp.mixup = 0;
    Loader loader(ds, o);
    CHECK(loader.next().has_value());
    CHECK(loader.next().has_value());
    CHECK_THROWS_WITH(loader.next(), Catch::Contains("000004.jpg"));
    CHECK_THROWS_WITH(loader.next(), Catch::Contains("000004.jpg"));  // a retry fails again, never hangs
    loader.seek(0, 0);
    CHECK(loader.next().has_value());
  }
}

TEST_CASE("loader: pin_memory without CUDA is an error that says so", "[data][loader]") {
  LoaderOptions o = train_options(1);
  o.pin_memory = true;
  if (at::hasCUDA()) {
    Loader loader(shapes().train, o);
    CHECK(loader.next()->img.is_pinned());
  } else {
    CHECK_THROWS_WITH(Loader(shapes().train, o), Catch::Contains("pin_memory needs libtorch with CUDA"));
  }
}

TEST_CASE("loader: stops promptly with a full queue and workers busy", "[data][loader]") {
  LoaderOptions o = train_options(2);
  o.prefetch_batches = 100;
  o.cache_ram = true;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Loader loader(shapes().train, o);
    CHECK(loader.next().has_value());
    loader.stop();
    CHECK_THROWS_AS(loader.next(), yolotrain::Error);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s < 2.0);
}

TEST_CASE("loader: cache=ram gives the same batches", "[data][loader]") {
  LoaderOptions o = train_options(2);
  Loader plain(shapes().train, o);
  o.cache_ram = true;
  Loader cached(shapes().train, o);
  for (int epoch : {0, 1}) {
    plain.seek(epoch);
    cached.seek(epoch);
    const auto a = read_epoch(plain), b = read_epoch(cached);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(same(a[i], b[i]));
  }
}

TEST_CASE("loader: a stop request on the token ends a waiting next() at once", "[data][loader]") {
  yolotrain::lifecycle::ControlToken token;
  LoaderOptions o = train_options(1);
  o.token = &token;
  Loader loader(shapes().train, o);
  Loader reference(shapes().train, train_options(0));
  token.request_stop();
  const auto t0 = std::chrono::steady_clock::now();
  int nothing = 0;
  for (int i = 0; i < 3; ++i) nothing += !loader.next().has_value();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  CHECK(nothing >= 1);
  token.reset();
  // Nothing was lost: the batches are still those of an uninterrupted loader.
  const auto got = read_epoch(loader);
  const auto expected = read_epoch(reference);
  REQUIRE(got.size() + (3 - nothing) == expected.size());
  CHECK(same(got.back(), expected.back()));
}
