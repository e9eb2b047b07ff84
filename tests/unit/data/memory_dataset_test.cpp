// A program's in-memory samples (SampleSource, memory_dataset): the same batches as the same
// images written to a folder, bad samples named, pixel buffers taken in.
#include <ATen/ATen.h>

#include "catch.hpp"

#include <cstdio>
#include <fstream>

#include "test_support.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/sample_source.hpp"
#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::TempDir;

namespace {

class ShapesSource : public SampleSource {
 public:
  explicit ShapesSource(std::size_t n) : n_(n) { options_.seed = 5, options_.imgsz = 96; }
  std::size_t size() const override { return n_; }
  Sample sample(std::size_t i) const override { return shapes_sample(options_, "train", static_cast<int>(i)); }

 private:
  ShapesOptions options_;
  std::size_t n_;
};

// A source with one sample made bad (an unknown class, then an empty image).
class ShapesWithBad : public ShapesSource {
 public:
  using ShapesSource::ShapesSource;
  Sample sample(std::size_t i) const override {
    Sample s = ShapesSource::sample(i);
    if (i == 2) s.boxes.push_back({9, 0.5f, 0.5f, 0.1f, 0.1f});
    if (i == 4) s.image = Image();
    return s;
  }
};

std::vector<std::string> shape_names() {
  int n = 0;
  const char* const* p = shapes_class_names(&n);
  return {p, p + n};
}

// The source's samples as a YOLO folder: lossless PNGs, and labels that parse back to the same
// doubles (%.17g of each float).
std::vector<fs::path> write_as_folder(const SampleSource& source, const fs::path& dir) {
  fs::create_directories(dir / "images");
  fs::create_directories(dir / "labels");
  std::vector<fs::path> images;
  for (std::size_t i = 0; i < source.size(); ++i) {
    const Sample s = source.sample(i);
    char stem[16];
    std::snprintf(stem, sizeof stem, "%06zu", i);
    const auto png = encode_png(s.image);
    std::ofstream(dir / "images" / (std::string(stem) + ".png"), std::ios::binary)
        .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    std::ofstream labels(dir / "labels" / (std::string(stem) + ".txt"));
    for (const auto& b : s.boxes) {
      char line[160];
      std::snprintf(line, sizeof line, "%d %.17g %.17g %.17g %.17g\n", b.cls, double(b.x), double(b.y), double(b.w),
                    double(b.h));
      labels << line;
    }
    images.push_back(dir / "images" / (std::string(stem) + ".png"));
  }
  return images;
}

LoaderOptions memory_test_options() {
  LoaderOptions o;
  o.batch = 4, o.imgsz = 96, o.workers = 2, o.seed = 3, o.epochs = 10, o.close_mosaic = 2;
  o.hyp.degrees = 5, o.hyp.mixup = 0.3;  // every random path
  return o;
}

}  // namespace

TEST_CASE("an in-memory dataset gives the same batches as its images written to a folder", "[data][memory]") {
  const auto source = std::make_shared<ShapesSource>(10);
  TempDir tmp;
  ScanOptions no_cache;
  no_cache.use_cache = false;
  const Dataset folder = scan_images(write_as_folder(*source, tmp.path()), shape_names(), no_cache);
  const Dataset memory = memory_dataset(source, shape_names(), "train");
  REQUIRE(memory.size() == folder.size());
  CHECK(memory.report.summary() == folder.report.summary());
  CHECK(memory.records[3].image == "memory:train/3");
  for (int epoch : {0, 9}) {  // with mosaic and mixup, and without (close_mosaic)
    Loader a(folder, memory_test_options()), b(memory, memory_test_options());
    a.seek(epoch);
    b.seek(epoch);
    for (int k = 0; k < 3; ++k) {
      INFO("epoch " << epoch << " batch " << k);
      auto x = a.next(), y = b.next();
      REQUIRE(x);
      REQUIRE(y);
      CHECK(at::equal(x->img, y->img));
      CHECK(at::equal(x->cls, y->cls));
      CHECK(at::equal(x->bboxes, y->bboxes));
      CHECK(at::equal(x->batch_idx, y->batch_idx));
    }
  }
}

TEST_CASE("an in-memory dataset names the samples it cannot use and keeps the others", "[data][memory]") {
  const Dataset ds = memory_dataset(std::make_shared<ShapesWithBad>(6), shape_names(), "train");
  CHECK(ds.size() == 4);
  REQUIRE(ds.report.corrupt.size() == 2);
  CHECK(ds.report.corrupt[0].file == "memory:train/2");
  CHECK_THAT(ds.report.corrupt[0].reason, Catch::Contains("class") && Catch::Contains("[0, 4)"));
  CHECK(ds.report.corrupt[1].file == "memory:train/4");
  CHECK_THAT(ds.report.corrupt[1].reason, Catch::Contains("empty image"));
  CHECK(ds.records[2].sample == 3);  // indices are the source's, skipping the bad ones
  CHECK_THROWS_WITH(memory_dataset(std::make_shared<ShapesWithBad>(0), shape_names(), "val"),
                    Catch::Contains("split 'val' has no usable sample"));
  CHECK_THROWS_WITH(memory_dataset(nullptr, shape_names(), "train"), Catch::Contains("no SampleSource"));
}

TEST_CASE("image_from_pixels takes BGR or RGB rows with a stride", "[data][memory]") {
  // 2x2 pixels, rows of 8 bytes (2 padding bytes each).
  const std::uint8_t rgb[16] = {1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0};
  const Image from_rgb = image_from_pixels(rgb, 2, 2, 8, /*rgb=*/true);
  CHECK(from_rgb.pixels == std::vector<std::uint8_t>{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10});
  const Image from_bgr = image_from_pixels(rgb, 2, 2, 8, /*rgb=*/false);
  CHECK(from_bgr.pixels == std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK_THROWS_WITH(image_from_pixels(rgb, 2, 2, 5, true), Catch::Contains("stride >= 3 * width"));
}
