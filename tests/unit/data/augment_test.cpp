#include "catch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "yolotrain/data/augment.hpp"

using namespace yolotrain::data;

namespace {

struct Rect {
  int x1 = 1 << 30, y1 = 1 << 30, x2 = -1, y2 = -1;
  int count = 0;
};

/// A w x h black image with a filled box of `colour` at [x1, x2) x [y1, y2).
void fill(Image& im, int x1, int y1, int x2, int y2, std::array<std::uint8_t, 3> colour) {
  for (int y = y1; y < y2; ++y)
    for (int x = x1; x < x2; ++x) std::copy(colour.begin(), colour.end(), im.pixel(y, x));
}

/// Bounding rectangle (pixel centres) of the pixels close to `colour`.
Rect find(const Image& im, std::array<std::uint8_t, 3> colour) {
  Rect r;
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x) {
      const std::uint8_t* p = im.pixel(y, x);
      int d = 0;
      for (int c = 0; c < 3; ++c) d = std::max(d, std::abs(int(p[c]) - int(colour[c])));
      if (d < 40) {
        r.x1 = std::min(r.x1, x), r.y1 = std::min(r.y1, y), r.x2 = std::max(r.x2, x), r.y2 = std::max(r.y2, y);
        ++r.count;
      }
    }
  return r;
}

/// The label must cover the pixels (within `tol` px) and not be much larger than them.
void check_covers(const PixelBox& b, const Rect& r, double tol) {
  INFO("box " << b.x1 << "," << b.y1 << "," << b.x2 << "," << b.y2 << " pixels " << r.x1 << "," << r.y1 << ","
              << r.x2 + 1 << "," << r.y2 + 1);
  REQUIRE(r.count > 0);
  CHECK(b.x1 <= r.x1 + tol);
  CHECK(b.y1 <= r.y1 + tol);
  CHECK(b.x2 >= r.x2 + 1 - tol);
  CHECK(b.y2 >= r.y2 + 1 - tol);
  CHECK(b.x1 >= r.x1 - tol);
  CHECK(b.y1 >= r.y1 - tol);
  CHECK(b.x2 <= r.x2 + 1 + tol);
  CHECK(b.y2 <= r.y2 + 1 + tol);
}

const std::array<std::uint8_t, 3> kRed{0, 0, 255}, kGreen{0, 255, 0}, kBlue{255, 0, 0}, kWhite{255, 255, 255};

}  // namespace

TEST_CASE("augment: boxes follow the pixels through random_perspective", "[data][augment]") {
  AugmentConfig cfg;
  cfg.degrees = 30, cfg.shear = 10, cfg.scale = 0.5, cfg.translate = 0.1;
  int kept = 0;
  for (double persp : {0.0, 0.0005}) {
    cfg.perspective = persp;
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
      Labelled s{Image(240, 320, 0), {{3, 100, 60, 180, 140}}};
      fill(s.image, 100, 60, 180, 140, kRed);
      Rng rng(seed);
      random_perspective(s, cfg, rng, 0);
      CHECK(s.image.width == 320);
      CHECK(s.image.height == 240);
      if (s.boxes.empty()) continue;
      ++kept;
      CHECK(s.boxes[0].cls == 3);
      // Rotation/shear: the label is the box of the warped corners, i.e. of the warped pixels.
      check_covers(s.boxes[0], find(s.image, kRed), 2.5);
    }
  }
  CHECK(kept >= 12);
}

TEST_CASE("augment: flips move boxes with pixels", "[data][augment]") {
  AugmentConfig cfg;
  cfg.flipud = 1.0, cfg.fliplr = 1.0;
  Labelled s{Image(100, 200, 0), {{0, 10, 20, 50, 40}}};
  fill(s.image, 10, 20, 50, 40, kGreen);
  Rng rng(1);
  random_flip(s, cfg, rng);
  const Rect r = find(s.image, kGreen);
  CHECK(r.x1 == 150);
  CHECK(r.y1 == 60);
  check_covers(s.boxes[0], r, 0.01);
}

TEST_CASE("augment: mosaic then perspective keeps every label on its pixels", "[data][augment]") {
  const int s = 160;
  AugmentConfig cfg;
  const std::array<std::array<std::uint8_t, 3>, 4> colours{kRed, kGreen, kBlue, kWhite};
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    std::vector<Labelled> four;
    for (int i = 0; i < 4; ++i) {
      Labelled l{Image(120 + 10 * i, 160, 0), {{i, 40.f, 30.f, 100.f, 90.f}}};
      fill(l.image, 40, 30, 100, 90, colours[i]);
      four.push_back(std::move(l));
    }
    Rng rng(seed);
    Labelled m = mosaic4(four, s, rng);
    CHECK(m.image.width == 2 * s);
    for (const auto& b : m.boxes) check_covers(b, find(m.image, colours[b.cls]), 0.01);
    random_perspective(m, cfg, rng, -s / 2);
    CHECK(m.image.width == s);
    CHECK(m.image.height == s);
    for (const auto& b : m.boxes) {
      const Rect r = find(m.image, colours[b.cls]);
      // Clipped boxes must still cover the visible pixels.
      check_covers(b, r, 2.5);
      ++checked;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("augment: a mosaic is its four tiles on a canvas of 114 elsewhere", "[data][augment]") {
  const int s = 64;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<Labelled> four;
    for (int i = 0; i < 4; ++i)
      four.push_back({Image(20 + 17 * i, 70 - 11 * i, static_cast<std::uint8_t>(10 + i)), {}});
    Rng rng(seed);
    const Labelled m = mosaic4(four, s, rng);
    Rng again(seed);
    const double xc = again.uniform(s / 2, 2 * s - s / 2), yc = again.uniform(s / 2, 2 * s - s / 2);
    std::size_t fill = 0, tiles = 0;
    for (int y = 0; y < 2 * s; ++y)
      for (int x = 0; x < 2 * s; ++x) {
        const std::uint8_t v = m.image.pixel(y, x)[0];
        // Tile i lies in quadrant i around the centre: 0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right.
        const int quadrant = (y >= int(yc) ? 2 : 0) + (x >= int(xc) ? 1 : 0);
        if (v == 114) ++fill;
        else if (v == 10 + quadrant) ++tiles;
      }
    INFO("seed " << seed);
    CHECK(fill + tiles == std::size_t(4 * s * s));  // nothing else, nothing left unwritten
    CHECK(tiles > 0);
    CHECK(fill > 0);
  }
}

TEST_CASE("augment: letterbox ratio and pad invert back within 1 px", "[data][augment]") {
  for (auto [h, w, nh, nw, scaleup] : {std::tuple{480, 640, 640, 640, true}, std::tuple{427, 640, 320, 320, true},
                                       std::tuple{333, 500, 384, 512, false}, std::tuple{640, 218, 640, 256, false}}) {
    Labelled s{Image(h, w, 0), {{0, 0.1f * w, 0.2f * h, 0.7f * w, 0.9f * h}}};
    const PixelBox orig = s.boxes[0];
    const LetterboxInfo info = letterbox(s, nh, nw, false, scaleup);
    CHECK(s.image.height == nh);
    CHECK(s.image.width == nw);
    const PixelBox b = s.boxes[0];
    CHECK(std::abs((b.x1 - info.pad_x) / info.ratio_w - orig.x1) < 1.0);
    CHECK(std::abs((b.y1 - info.pad_y) / info.ratio_h - orig.y1) < 1.0);
    CHECK(std::abs((b.x2 - info.pad_x) / info.ratio_w - orig.x2) < 1.0);
    CHECK(std::abs((b.y2 - info.pad_y) / info.ratio_h - orig.y2) < 1.0);
    if (!scaleup) CHECK(info.ratio_w <= 1.0);
    // Padding is 114 grey, split evenly.
    if (info.pad_y >= 1) CHECK(int(s.image.pixel(0, nw / 2)[0]) == 114);
    if (info.pad_x >= 1) CHECK(int(s.image.pixel(nh / 2, 0)[1]) == 114);
  }
}

TEST_CASE("augment: HSV changes colours but not grey neutral hue and is off at zero gains", "[data][augment]") {
  Image im(8, 8, 0);
  fill(im, 0, 0, 8, 8, {30, 90, 200});
  AugmentConfig off;
  off.hsv_h = off.hsv_s = off.hsv_v = 0;
  Rng r1(5);
  Image same = im;
  random_hsv(same, off, r1);
  CHECK(same.pixels == im.pixels);
  AugmentConfig cfg;
  bool changed = false;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    Image x = im;
    Rng r(seed);
    random_hsv(x, cfg, r);
    changed |= x.pixels != im.pixels;
  }
  CHECK(changed);
}

// numpy: ((np.arange(256.) + r * 180) % 180).astype(np.uint8) (8.4, data/augment.py:1500) and
// ((x * (r + 1)) % 180).astype(np.uint8) (8.3.78): their sums and entries at x = 0 2 3 100 179 180 200 255.
TEST_CASE("augment: the hue LUT is Ultralytics 8.4's wrapped shift, or 8.3's scaling", "[data][augment]") {
  struct Case {
    double r;
    bool shift;
    int sum;
    std::array<int, 8> at;
  };
  const std::array<int, 8> xs = {0, 2, 3, 100, 179, 180, 200, 255};
  for (const Case& c : {Case{-0.0123, true, 19272, {177, 179, 0, 97, 176, 177, 17, 72}},
                        Case{-0.0123, false, 18966, {0, 1, 2, 98, 176, 177, 17, 71}},
                        Case{0.015 * 0.37, true, 18960, {0, 2, 3, 100, 179, 0, 20, 75}},
                        Case{-0.5, true, 25800, {90, 92, 93, 10, 89, 90, 110, 165}},
                        Case{-0.5, false, 16256, {0, 1, 1, 50, 89, 90, 100, 127}}}) {
    CAPTURE(c.r, c.shift);
    int sum = 0;
    for (int x = 0; x < 256; ++x) sum += hue_lut_entry(x, c.r, c.shift);
    CHECK(sum == c.sum);
    for (std::size_t i = 0; i < xs.size(); ++i) CHECK(int(hue_lut_entry(xs[i], c.r, c.shift)) == c.at[i]);
  }
}

// Ultralytics 8.4's CutMix: a rectangle free of the sample's boxes takes the other sample's pixels and
// its boxes that lie at least 10 % inside it, clipped to it; the sample's own boxes stay.
TEST_CASE("augment: cutmix pastes a free rectangle of the other sample with its boxes clipped to it",
          "[data][augment]") {
  int changed = 0, unchanged = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    Labelled a{Image(64, 64, 0), {{0, 2, 2, 14, 14, {}, {}}}};
    Labelled b{Image(64, 64, 200), {}};
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        const float x = 16.f * float(i), y = 16.f * float(j);
        b.boxes.push_back({1, x + 2, y + 2, x + 14, y + 14, {}, {}});
      }
    }
    Rng rng(seed);
    if (!cutmix(a, b, rng)) {
      ++unchanged;
      CHECK(a.boxes.size() == 1);
      CHECK(std::all_of(a.image.pixels.begin(), a.image.pixels.end(), [](std::uint8_t v) { return v == 0; }));
      continue;
    }
    ++changed;
    CAPTURE(seed);
    REQUIRE(a.boxes.size() > 1);
    CHECK(a.boxes[0].cls == 0);  // the sample's own box, untouched
    CHECK(a.boxes[0].x2 == 14.f);
    // The pasted region: a rectangle of 200s holding every pasted box, none of it on the own box.
    int x1 = 64, y1 = 64, x2 = 0, y2 = 0;
    for (int y = 0; y < 64; ++y) {
      for (int x = 0; x < 64; ++x) {
        if (a.image.pixel(y, x)[0] != 200) continue;
        x1 = std::min(x1, x), y1 = std::min(y1, y);
        x2 = std::max(x2, x + 1), y2 = std::max(y2, y + 1);
      }
    }
    CHECK(x1 < x2);
    for (std::size_t k = 1; k < a.boxes.size(); ++k) {
      const PixelBox& p = a.boxes[k];
      CHECK(p.cls == 1);
      CHECK(p.x1 >= x1);
      CHECK(p.x2 <= x2);
      CHECK(p.y1 >= y1);
      CHECK(p.y2 <= y2);
    }
    CHECK((x1 >= 14 || y1 >= 14 || x2 <= 2 || y2 <= 2));  // free of the own box
  }
  CHECK(changed > 5);
  CHECK(unchanged > 0);
}

TEST_CASE("augment: mixup blends with a Beta(32 32) ratio and joins labels", "[data][augment]") {
  Labelled a{Image(4, 4, 200), {{0, 0, 0, 1, 1}}}, b{Image(4, 4, 0), {{1, 1, 1, 2, 2}}};
  Rng rng(3);
  mixup(a, b, rng);
  CHECK(a.boxes.size() == 2);
  const int v = a.image.pixels[0];
  CHECK(v > 60);   // r in roughly [0.3, 0.7]
  CHECK(v < 140);
}
