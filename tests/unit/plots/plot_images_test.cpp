#include <ATen/ATen.h>

#include "yolotrain/plots/plot_images.hpp"
#include "yolotrain/plots/box_label.hpp"

#include "catch.hpp"

#include <cstdlib>

namespace yp = yolotrain::plots;

namespace {

// True when the pixel is within `tol` of class c's colour (B, G, R).
bool has_class_color(const yolotrain::data::Image& im, int y, int x, std::int64_t c, int tol = 40) {
  const auto want = yolotrain::plots::class_color(c);
  const std::uint8_t* p = im.pixel(y, x);
  for (int k = 0; k < 3; ++k) {
    if (std::abs(int(p[k]) - int(want[k])) > tol) return false;
  }
  return true;
}

yp::ImagesPlot two_black_images() {
  yp::ImagesPlot p;
  p.images = at::zeros({2, 3, 64, 64});
  p.names = {"cat", "dog"};
  return p;
}

}  // namespace

TEST_CASE("plot_images draws each label where it says, tiles filled column by column", "[plots]") {
  yp::ImagesPlot p = two_black_images();
  // Image 0: a cat at (16..48, 16..48); image 1: a dog at (8..24, 40..56) (normalised xywh).
  p.batch_idx = at::tensor({0.f, 1.f});
  p.cls = at::tensor({0.f, 1.f});
  p.bboxes = at::tensor({0.5f, 0.5f, 0.5f, 0.5f, 16.f / 64, 48.f / 64, 16.f / 64, 16.f / 64}).view({2, 4});
  const auto im = yp::plot_images(p);
  REQUIRE(im.width == 128);  // ceil(sqrt(2)) = 2 tiles a side
  REQUIRE(im.height == 128);
  CHECK(has_class_color(im, 40, 16, 0));       // the cat box's left edge, tile (0, 0)
  CHECK(has_class_color(im, 40, 48, 0));       // its right edge
  CHECK(has_class_color(im, 64 + 52, 8, 1));   // the dog's left edge: image 1 is below image 0
  CHECK(has_class_color(im, 64 + 52, 24, 1));
  CHECK_FALSE(has_class_color(im, 40, 30, 0));  // inside the cat box: the image (black)
  const std::uint8_t* empty_tile = im.pixel(32, 96);  // the third tile (right column) is white
  CHECK((empty_tile[0] == 255 && empty_tile[1] == 255 && empty_tile[2] == 255));
}

TEST_CASE("plot_images draws predictions above conf_thres only, and pixel boxes scaled with the mosaic", "[plots]") {
  yp::ImagesPlot p = two_black_images();
  p.batch_idx = at::tensor({0.f, 0.f});
  p.cls = at::tensor({0.f, 1.f});
  p.bboxes = at::tensor({32.f, 32.f, 32.f, 32.f, 32.f, 32.f, 48.f, 48.f}).view({2, 4});  // pixels
  p.confs = at::tensor({0.9f, 0.2f});
  const auto im = yp::plot_images(p);
  CHECK(has_class_color(im, 40, 16, 0));
  CHECK_FALSE(has_class_color(im, 40, 8, 1));  // the 0.2 dog box is not drawn
  p.max_size = 64;  // the 128 px mosaic halves: boxes in pixels follow
  const auto small = yp::plot_images(p);
  REQUIRE(small.width == 64);
  CHECK(has_class_color(small, 20, 8, 0, 70));
}

// Ultralytics' plot_images with masks: each drawn box's mask, resized to its tile, blended as
// image * 0.4 + class colour * 0.6; index masks (overlap) name the image's k-th box by k.
TEST_CASE("plot_images blends each instance's mask in its class colour", "[plots]") {
  yp::ImagesPlot p;
  p.images = at::zeros({1, 3, 64, 64}, at::kByte);
  p.batch_idx = at::zeros({2});
  p.cls = at::tensor({1.0F, 3.0F});
  p.bboxes = at::tensor({0.25F, 0.5F, 0.5F, 1.0F, 0.75F, 0.5F, 0.5F, 1.0F}).reshape({2, 4});
  p.masks = at::zeros({1, 16, 16});
  p.masks.slice(2, 0, 8).fill_(1);   // the left half: box 1
  p.masks.slice(2, 8, 16).slice(1, 0, 8).fill_(2);  // the top right quarter: box 2
  p.overlap_masks = true;
  const auto im = yp::plot_images(p);
  const auto blended = [](std::int64_t c) {
    auto col = yolotrain::plots::class_color(c);
    for (auto& v : col) v = static_cast<std::uint8_t>(v * 0.6);
    return col;
  };
  const auto at_pixel = [&](int y, int x) {
    const std::uint8_t* px = im.pixel(y, x);
    return std::array<std::uint8_t, 3>{px[0], px[1], px[2]};
  };
  CHECK(at_pixel(40, 16) == blended(1));
  CHECK(at_pixel(16, 48) == blended(3));
  CHECK(at_pixel(48, 48) == std::array<std::uint8_t, 3>{0, 0, 0});  // no instance: the image
  // A prediction below conf_thres has neither box nor mask.
  p.confs = at::tensor({0.9F, 0.1F});
  p.masks = at::zeros({2, 16, 16});
  p.masks[0].slice(1, 0, 8).fill_(1);
  p.masks[1].slice(1, 8, 16).fill_(1);
  p.overlap_masks = false;
  const auto pred = yp::plot_images(p);
  CHECK(pred.pixel(40, 16)[0] == blended(1)[0]);
  CHECK(pred.pixel(16, 48)[0] == 0);
}
