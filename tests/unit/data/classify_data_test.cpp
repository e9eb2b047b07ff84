// Classification data (issue 54): class-folder datasets as Ultralytics 8.4.117's check_cls_dataset and
// ClassificationDataset read them, its transforms (classify_augmentations / classify_transforms; the
// resizes against PIL's own pixels), the loader's classification batches and the shapes-cls set.
#include <ATen/ATen.h>

#include "catch.hpp"

#include <algorithm>
#include <numeric>

#include "data_test_support.hpp"
#include "test_support.hpp"
#include "yolotrain/data/class_folders.hpp"
#include "yolotrain/data/classify_transforms.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/data/synthetic.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::pattern_image;
using yolotrain::test::TempDir;
using yolotrain::test::write_jpeg;
using yolotrain::test::write_text;

namespace {

std::int64_t pixel_sum(const Image& im) {
  return std::accumulate(im.pixels.begin(), im.pixels.end(), std::int64_t{0});
}

std::vector<std::uint8_t> at_pixel(const Image& im, int y, int x) {
  return {im.pixel(y, x)[0], im.pixel(y, x)[1], im.pixel(y, x)[2]};
}

}  // namespace

TEST_CASE("a class-folder dataset has train's folders as sorted class names and val or test as validation",
          "[data][classify]") {
  TempDir dir;
  for (const char* cls : {"zebra", "ant", "moth"}) {
    write_jpeg(dir / "train" / cls / "a.jpg");
    write_jpeg(dir / "train" / cls / "b.jpg");
    write_jpeg(dir / "test" / cls / "c.jpg");
  }
  CHECK(is_class_folders(dir.path()));
  const DataConfig c = load_class_folders(dir.path());
  CHECK(c.classify);
  CHECK(c.names == std::vector<std::string>{"ant", "moth", "zebra"});
  REQUIRE(c.has("val"));
  CHECK(c.splits.at("val").at(0).filename() == "test");  // no val/: Ultralytics falls back to test/
  const Dataset train = load_split(c, "train");
  REQUIRE(train.size() == 6);
  CHECK(train.records[0].category == 0);
  CHECK(train.records[0].image.parent_path().filename() == "ant");
  CHECK(train.records[5].category == 2);
  CHECK(train.report.images_per_class == std::vector<std::size_t>{2, 2, 2});
  CHECK(train.report.summary() == "6 images, 0 corrupt");
}

TEST_CASE("a class-folder dataset's problems are named: no train folder, an unknown class, a stray image, a "
          "corrupt image",
          "[data][classify]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_class_folders(dir.path()), Catch::Contains("needs a 'train' folder"));
  write_jpeg(dir / "train" / "cat" / "a.jpg");
  write_jpeg(dir / "train" / "dog" / "b.jpg");
  write_text(dir / "train" / "dog" / "broken.jpg", "not a jpeg");
  write_jpeg(dir / "val" / "cow" / "c.jpg");
  const DataConfig c = load_class_folders(dir.path());
  const Dataset train = load_split(c, "train");
  CHECK(train.size() == 2);  // the broken image is skipped and named
  REQUIRE(train.report.corrupt.size() == 1);
  CHECK(train.report.corrupt[0].file.filename() == "broken.jpg");
  CHECK_THROWS_WITH(load_split(c, "val"), Catch::Contains("class 'cow' is not one of train's 2 class folders"));
  fs::remove_all(dir / "val" / "cow");
  write_jpeg(dir / "val" / "d.jpg");
  CHECK_THROWS_WITH(load_split(c, "val"), Catch::Contains("must lie in its class's folder"));
}

TEST_CASE("the classification resize is PIL's bilinear resize, and the centre crop torchvision's", "[data][classify]") {
  // PIL's Image.resize((33, 21), BILINEAR) and Resize(32) + CenterCrop(32) of the same pattern (in
  // Python, on pattern_image's pixels): sums and pixels as PIL gives them (B, G, R).
  const Image im = pattern_image(64, 96);
  const Image small = resize_antialiased(im, 21, 33);
  CHECK(pixel_sum(small) == 256872);
  CHECK(at_pixel(small, 5, 7) == std::vector<std::uint8_t>{56, 64, 84});
  CHECK(at_pixel(small, 13, 25) == std::vector<std::uint8_t>{195, 162, 40});
  const Image crop = classify_centre_crop(im, 32);
  REQUIRE(crop.height == 32);
  REQUIRE(crop.width == 32);
  CHECK(pixel_sum(crop) == 379584);
  CHECK(at_pixel(crop, 3, 4) == std::vector<std::uint8_t>{65, 25, 200});
  const Image same = classify_centre_crop(im, 64);  // the shorter side already 64: a crop only
  CHECK(at_pixel(same, 10, 0) == at_pixel(im, 10, 16));
}

TEST_CASE("random resized crops stay inside the image with the area and aspect asked for", "[data][classify]") {
  Rng rng(7);
  for (int i = 0; i < 200; ++i) {
    const CropBox b = random_resized_crop_box(60, 90, 0.5, 1.0, 3.0 / 4.0, 4.0 / 3.0, rng);
    REQUIRE(b.top >= 0);
    REQUIRE(b.left >= 0);
    REQUIRE(b.top + b.height <= 60);
    REQUIRE(b.left + b.width <= 90);
    const double area = double(b.height) * b.width / (60.0 * 90.0), aspect = double(b.width) / b.height;
    CHECK(area >= 0.45);  // rounding of the sides
    CHECK(aspect >= 0.7);
    CHECK(aspect <= 1.4);
  }
  // Ten misses (no crop of that area fits), then torchvision's fallback: the centre at the ratio's edge.
  const CropBox f = random_resized_crop_box(10, 100, 1.0, 1.0, 3.0 / 4.0, 4.0 / 3.0, rng);
  CHECK(f.height == 10);
  CHECK(f.width == 13);
  CHECK(f.left == 43);
}

TEST_CASE("colour jitter and erasing change what they should and nothing when off", "[data][classify]") {
  const Image im = pattern_image(32, 32);
  Image same = im;
  Rng rng(1);
  color_jitter(same, 0, 0, 0, rng);
  random_erasing(same, 0, rng);
  CHECK(same.pixels == im.pixels);
  Image erased = im;
  random_erasing(erased, 1.0, rng);
  const auto zeros =
      std::count(erased.pixels.begin(), erased.pixels.end(), 0) - std::count(im.pixels.begin(), im.pixels.end(), 0);
  CHECK(zeros >= static_cast<long>(0.02 * 32 * 32 * 3) - 3 * 32);
  Image jittered = im;
  color_jitter(jittered, 0.015, 0.7, 0.4, rng);
  CHECK(jittered.pixels != im.pixels);
}

TEST_CASE("a classification loader gives imgsz squares and each image's class, the same for any workers",
          "[data][classify]") {
  TempDir dir;
  ShapesOptions o = shapes_cls_options();
  o.train = 24;
  o.val = 8;
  write_shapes_dataset(dir.path(), o);
  const DataConfig c = load_class_folders(dir.path());
  CHECK(c.names == std::vector<std::string>{"cross", "ellipse", "rectangle", "triangle"});
  const Dataset train = load_split(c, "train");
  REQUIRE(train.size() == 24);
  CHECK(train.report.images_per_class == std::vector<std::size_t>{6, 6, 6, 6});
  LoaderOptions opt;
  opt.classify = true;
  opt.batch = 8;
  opt.imgsz = 64;
  opt.workers = 0;
  opt.rect = true;  // ignored for classification
  Loader one(train, opt);
  opt.workers = 3;
  Loader three(train, opt);
  one.seek(1);
  three.seek(1);
  const Batch a = *one.next(), b = *three.next();
  CHECK(a.img.sizes() == at::IntArrayRef({8, 3, 64, 64}));
  CHECK(a.cls.scalar_type() == at::kLong);
  CHECK(a.cls.sizes() == at::IntArrayRef({8}));
  CHECK(a.img.equal(b.img));
  CHECK(a.cls.equal(b.cls));
  const std::vector<std::size_t> order = one.order(1);
  for (int i = 0; i < 8; ++i) CHECK(a.cls[i].item<int>() == train.records[order[i]].category);
  // Validation: the centre crop of a 64 px image at imgsz 64 is the decoded image itself.
  opt.augment = false;
  opt.shuffle = false;
  Loader val(train, opt);
  const Batch v = *val.next();
  const Image first = decode_image(train.records[0].image);
  CHECK(v.img[0][2][5][7].item<int>() == first.pixel(5, 7)[0]);  // RGB batch, BGR image
  CHECK(v.img[0][0][40][30].item<int>() == first.pixel(40, 30)[2]);
}
