#include "catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "data_test_support.hpp"
#include "image_bombs.hpp"
#include "test_support.hpp"
#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;
using namespace yolotrain::data;
using yolotrain::test::shared_dataset;
using yolotrain::test::TempDir;

namespace {

double mean_abs_diff(const Image& a, const Image& b) {
  REQUIRE(a.height == b.height);
  REQUIRE(a.width == b.width);
  double sum = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return sum / a.pixels.size();
}

/// A JPEG with an EXIF APP1 segment carrying `orientation`, inserted after SOI.
std::vector<std::uint8_t> with_exif(std::vector<std::uint8_t> jpeg, int orientation) {
  const std::vector<std::uint8_t> tiff = {'M', 'M', 0, 42, 0, 0, 0, 8,  // header, IFD0 at 8
                                          0, 1,                         // one entry
                                          0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, std::uint8_t(orientation), 0, 0,
                                          0, 0, 0, 0};  // next IFD
  std::vector<std::uint8_t> app1 = {0xFF, 0xE1, 0, 0, 'E', 'x', 'i', 'f', 0, 0};
  app1.insert(app1.end(), tiff.begin(), tiff.end());
  const std::size_t len = app1.size() - 2;
  app1[2] = std::uint8_t(len >> 8), app1[3] = std::uint8_t(len & 0xFF);
  jpeg.insert(jpeg.begin() + 2, app1.begin(), app1.end());
  return jpeg;
}

}  // namespace

TEST_CASE("decode: EXIF orientation 6 rotates like OpenCV imread", "[data][decode]") {
  TempDir dir;
  const Image src = yolotrain::test::pattern_image(64, 96);
  write_bytes(dir / "rot.jpg", with_exif(encode_jpeg(src, 95), 6));
  const ImageInfo info = verify_image(dir / "rot.jpg");
  CHECK(info.orientation == 6);
  CHECK(info.width == 64);
  CHECK(info.height == 96);
  const Image out = decode_image(dir / "rot.jpg");
  REQUIRE(out.height == 96);
  REQUIRE(out.width == 64);
  // Rotated 90 degrees clockwise: out(y, x) = src(63 - x, y).
  for (auto [y, x] : {std::pair{10, 5}, std::pair{80, 50}, std::pair{40, 30}}) {
    CHECK(std::abs(int(out.pixel(y, x)[0]) - int(src.pixel(63 - x, y)[0])) < 14);
    CHECK(std::abs(int(out.pixel(y, x)[1]) - int(src.pixel(63 - x, y)[1])) < 14);
  }
  write_bytes(dir / "flip.jpg", with_exif(encode_jpeg(src, 95), 3));
  const Image flipped = decode_image(dir / "flip.jpg");
  REQUIRE(flipped.width == 96);
  CHECK(std::abs(int(flipped.pixel(0, 0)[0]) - int(src.pixel(63, 95)[0])) < 14);
}

TEST_CASE("decode: PNG round trip and unsupported formats", "[data][decode]") {
  TempDir dir;
  const Image src = yolotrain::test::pattern_image(33, 47);
  write_bytes(dir / "a.png", encode_png(src));
  const Image back = decode_image(dir / "a.png");
  CHECK(back.pixels == src.pixels);
  yolotrain::test::write_text(dir / "a.gif", "GIF89a....");
  CHECK_THROWS_WITH(decode_image(dir / "a.gif"), Catch::Contains("a.gif") && Catch::Contains("supported: JPEG, PNG"));
  yolotrain::test::write_text(dir / "empty.jpg", "");
  CHECK_THROWS_WITH(decode_image(dir / "empty.jpg"), Catch::Contains("empty.jpg") && Catch::Contains("empty file"));
}

TEST_CASE("decode: DCT-scaled decode agrees with full decode and resize", "[data][decode]") {
  const fs::path root = shared_dataset("bccd");
  if (root.empty()) {
    WARN("shared datasets absent (" YOLOTRAIN_SHARED_DIR "): skipped");
    return;
  }
  const auto images = list_images({root / "images/val"});
  double worst = 0, total = 0;
  const int n = 10;
  for (int i = 0; i < n; ++i) {
    for (int target : {320, 160}) {
      Labelled full{decode_image(images[i]), {}};
      CHECK(full.image.width == 640);
      resize_long_side(full, target);
      Labelled scaled{decode_image(images[i], target), {}};
      CHECK(scaled.image.width == target);  // 640 -> 1/2 or 1/4 in the DCT, nothing left to resize
      resize_long_side(scaled, target);
      const double d = mean_abs_diff(full.image, scaled.image);
      worst = std::max(worst, d);
      total += d;
    }
  }
  WARN("DCT-scaled vs full decode + INTER_LINEAR resize: mean abs diff " << total / (2 * n) << " (worst image "
                                                                        << worst << ") grey levels");
  CHECK(worst < 3.0);
  // Below twice the target, no DCT scaling.
  CHECK(decode_image(images[0], 400).width == 640);
}

TEST_CASE("images whose header declares more pixels than the limit are refused before decoding", "[data][decode]") {
  TempDir dir;
  yolotrain::test::write_png_bomb(dir / "bomb.png", 40000, 40000);
  yolotrain::test::write_jpeg_bomb(dir / "bomb.jpg", 40000, 40000);
  CHECK(fs::file_size(dir / "bomb.png") < 2000);
  const std::string why = "image size 40000x40000 (1600000000 pixels) exceeds the limit of 178956970 pixels";
  CHECK(max_image_pixels() == 178956970);  // PIL's: 2 * Image.MAX_IMAGE_PIXELS
  for (const char* name : {"bomb.png", "bomb.jpg"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH(decode_image(dir / name), Catch::Contains((dir / name).string() + ": " + why));
    CHECK_THROWS_WITH(decode_image(dir / name, 320), Catch::Contains(why));  // DCT scaling does not bypass it
    CHECK_THROWS_WITH(verify_image(dir / name),
                      Catch::StartsWith(why) && Catch::Contains("YOLOTRAIN_MAX_IMAGE_PIXELS"));
  }
  // EXIF orientation (a transposed image has the same pixels) does not bypass it either.
  const std::string jpeg = yolotrain::test::slurp(dir / "bomb.jpg");
  write_bytes(dir / "rotated.jpg", with_exif({jpeg.begin(), jpeg.end()}, 6));
  CHECK_THROWS_WITH(verify_image(dir / "rotated.jpg"), Catch::StartsWith(why));
  CHECK_THROWS_WITH(decode_image(dir / "rotated.jpg"), Catch::Contains(why));
}

TEST_CASE("the pixel limit is configurable and an image at the limit decodes", "[data][decode]") {
  TempDir dir;
  write_bytes(dir / "a.png", encode_png(Image(16, 20, 7)));
  write_bytes(dir / "a.jpg", encode_jpeg(Image(16, 20, 7)));
  const std::uint64_t before = max_image_pixels();
  set_max_image_pixels(16 * 20);
  CHECK(decode_image(dir / "a.png").width == 20);
  CHECK(decode_image(dir / "a.jpg").height == 16);
  set_max_image_pixels(16 * 20 - 1);
  CHECK_THROWS_WITH(decode_image(dir / "a.png"),
                    Catch::Contains("image size 20x16 (320 pixels) exceeds the limit of 319 pixels"));
  CHECK_THROWS_WITH(decode_image(dir / "a.jpg"), Catch::Contains("20x16 (320 pixels) exceeds the limit of 319"));
  set_max_image_pixels(0);  // no limit
  CHECK(decode_image(dir / "a.png").width == 20);
  set_max_image_pixels(before);
}
