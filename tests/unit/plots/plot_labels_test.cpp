#include "catch.hpp"

#include "yolotrain/plots/plot_labels.hpp"
#include "yolotrain/plots/box_label.hpp"

namespace yp = yolotrain::plots;
using yolotrain::data::Box;

namespace {

// The pixels of colour `bgr` in the square of `side` at (x0, y0).
std::size_t pixels_of(const yolotrain::data::Image& im, int x0, int y0, int side,
                      const std::array<std::uint8_t, 3>& bgr) {
  std::size_t n = 0;
  for (int y = y0; y < y0 + side; ++y) {
    for (int x = x0; x < x0 + side; ++x) {
      const auto* p = im.pixel(y, x);
      n += p[0] == bgr[0] && p[1] == bgr[1] && p[2] == bgr[2];
    }
  }
  return n;
}

}  // namespace

TEST_CASE("labels.jpg draws the instances per class as bars in the class colours, in proportion", "[plots]") {
  std::vector<Box> boxes;
  for (int i = 0; i < 30; ++i) boxes.push_back({0, 0.1f + 0.02f * i, 0.3f + 0.01f * i, 0.05f + 0.01f * i, 0.2f});
  for (int i = 0; i < 10; ++i) boxes.push_back({1, 0.7f, 0.9f - 0.03f * i, 0.4f, 0.1f + 0.02f * i});
  const auto im = yp::plot_labels(boxes, {"a", "b", "c"});
  CHECK(im.width == 1600);
  CHECK(im.height == 1600);
  const std::size_t a = pixels_of(im, 0, 0, 800, yolotrain::plots::class_color(0));  // the histogram's tile
  const std::size_t b = pixels_of(im, 0, 0, 800, yolotrain::plots::class_color(1));
  REQUIRE(b > 1000);
  CHECK(double(a) / double(b) == Approx(3.0).epsilon(0.05));  // bars of equal width, 30 and 10 high
  // The centred boxes (right, top) in their colours; the 2D histograms below have coloured cells.
  CHECK(pixels_of(im, 800, 0, 800, {255, 255, 255}) > 400000);
  std::size_t coloured = 0;
  for (int y = 800; y < 1600; ++y) {
    for (int x = 0; x < 1600; ++x) {
      const auto* p = im.pixel(y, x);
      coloured += p[0] > p[2] + 40;  // blue cells
    }
  }
  CHECK(coloured > 1000);
  const auto none = yp::plot_labels({}, {"a"});
  CHECK(none.width == 1600);
}
