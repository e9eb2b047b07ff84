#include "yolotrain/predict/annotate.hpp"

#include "catch.hpp"

using yolotrain::data::Image;
using yolotrain::predict::class_color;
using yolotrain::predict::Detection;
using yolotrain::predict::draw_detections;

namespace {

std::array<std::uint8_t, 3> pixel_at(const Image& im, int y, int x) {
  const std::uint8_t* p = im.pixel(y, x);
  return {p[0], p[1], p[2]};
}

}  // namespace

TEST_CASE("class colours are Ultralytics' palette in BGR", "[predict]") {
  CHECK(class_color(0) == std::array<std::uint8_t, 3>{0xFF, 0x2A, 0x04});   // #042AFF
  CHECK(class_color(1) == std::array<std::uint8_t, 3>{0xEB, 0xDB, 0x0B});   // #0BDBEB
  CHECK(class_color(20) == class_color(0));
  CHECK(yolotrain::predict::label_text_color(1) == std::array<std::uint8_t, 3>{104, 31, 17});  // dark on light
  CHECK(yolotrain::predict::label_text_color(0) == std::array<std::uint8_t, 3>{255, 255, 255});
}

TEST_CASE("draw_detections draws boxes in the class colour with a label above", "[predict]") {
  Image im(200, 300, 50);
  Detection d{100, 80, 200, 150, 0.87f, 0, "cell", {}, {}, {}, 0, {}};
  draw_detections(im, {d});
  // Default line width: max(round((200 + 300 + 3) / 2 * 0.003), 2) = 2; the box's left edge.
  CHECK(pixel_at(im, 115, 100) == class_color(0));
  CHECK(pixel_at(im, 115, 150) == std::array<std::uint8_t, 3>{50, 50, 50});  // inside the box: untouched
  CHECK(pixel_at(im, 10, 10) == std::array<std::uint8_t, 3>{50, 50, 50});     // away from it: untouched
  // The label's filled background just above the top-left corner, with white text somewhere in it.
  CHECK(pixel_at(im, 78, 101) == class_color(0));
  bool white = false;
  for (int y = 62; y < 80; ++y) {
    for (int x = 100; x < 160; ++x) {
      const auto c = pixel_at(im, y, x);  // anti-aliased glyphs: their cores are near white
      white = white || (c[0] > 200 && c[1] > 200 && c[2] > 200);
    }
  }
  CHECK(white);
  Image plain(200, 300, 50);
  draw_detections(plain, {d}, {4, false, false});  // no label, 4 px lines
  CHECK(pixel_at(plain, 70, 110) == std::array<std::uint8_t, 3>{50, 50, 50});  // where the label would be
  CHECK(pixel_at(plain, 115, 101) == class_color(0));
}
