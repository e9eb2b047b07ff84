#include <ATen/ATen.h>

#include "catch.hpp"

#include "yolotrain/plots/plot_confusion.hpp"

namespace yp = yolotrain::plots;
using yolotrain::metrics::ConfusionMatrix;

namespace {

// A 2-class matrix made by hand: image 1 has two class-0 labels, one found as class 0 and one as
// class 1; image 2 has a class-1 label that is missed. Counts: [0][0] 1, [1][0] 1, [bg][1] 1.
ConfusionMatrix hand_made() {
  ConfusionMatrix m(2);
  const at::Tensor gt = at::tensor({0.f, 0.f, 10.f, 10.f, 50.f, 50.f, 60.f, 60.f}).view({2, 4});
  const at::Tensor det = at::tensor({0.f, 0.f, 10.f, 10.f, 0.9f, 0.f, 50.f, 50.f, 60.f, 60.f, 0.8f, 1.f}).view({2, 6});
  m.process_batch(det, gt, at::tensor({0.f, 0.f}));
  m.process_batch(at::Tensor(), at::tensor({0.f, 0.f, 5.f, 5.f}).view({1, 4}), at::tensor({1.f}));
  return m;
}

std::array<int, 3> centre_of(const yolotrain::data::Image& im, const yp::PixelRect& r) {
  const auto* p = im.pixel(r.y + r.height / 4, r.x + r.width / 8);  // clear of the cell's number
  return {p[0], p[1], p[2]};
}

std::array<int, 3> bgr(const std::array<std::uint8_t, 3>& s) { return {s[0], s[1], s[2]}; }

}  // namespace

TEST_CASE("the confusion matrix picture colours each cell by its value, the empty ones white", "[plots]") {
  const ConfusionMatrix m = hand_made();
  REQUIRE(m.at(0, 0) == 1);
  REQUIRE(m.at(1, 0) == 1);
  REQUIRE(m.at(2, 1) == 1);
  const auto counts = yp::plot_confusion_matrix(m, {"cat", "dog"}, false);
  CHECK(counts.width == 3000);
  CHECK(counts.height == 2250);
  const std::array<int, 3> darkest = bgr(yp::blues(1.0)), white{255, 255, 255};
  CHECK(darkest == std::array<int, 3>{107, 48, 8});  // matplotlib's Blues ends at #08306b
  CHECK(centre_of(counts, yp::confusion_cell(2, 0, 0)) == darkest);  // every count is the maximum, 1
  CHECK(centre_of(counts, yp::confusion_cell(2, 1, 0)) == darkest);
  CHECK(centre_of(counts, yp::confusion_cell(2, 2, 1)) == darkest);
  CHECK(centre_of(counts, yp::confusion_cell(2, 0, 1)) == white);
  CHECK(centre_of(counts, yp::confusion_cell(2, 2, 2)) == white);
  // Normalized by column: class 0's column is 0.5 / 0.5, class 1's 1.0.
  const auto normalized = yp::plot_confusion_matrix(m, {"cat", "dog"}, true);
  CHECK(centre_of(normalized, yp::confusion_cell(2, 2, 1)) == darkest);
  CHECK(centre_of(normalized, yp::confusion_cell(2, 0, 0)) == bgr(yp::blues(0.5)));
  CHECK(centre_of(normalized, yp::confusion_cell(2, 1, 0)) == bgr(yp::blues(0.5)));
  CHECK(normalized.pixels != counts.pixels);
  CHECK(yp::confusion_matrix_file(true) == "confusion_matrix_normalized.png");
  CHECK(yp::confusion_matrix_file(false) == "confusion_matrix.png");
}

TEST_CASE("the confusion matrix picture of many classes and of an empty matrix draws", "[plots]") {
  ConfusionMatrix many(80);
  many.process_batch(at::Tensor(), at::tensor({0.f, 0.f, 5.f, 5.f}).view({1, 4}), at::tensor({79.f}));
  const auto im = yp::plot_confusion_matrix(many, std::vector<std::string>(80, "traffic light"), false);
  CHECK(centre_of(im, yp::confusion_cell(80, 80, 79)) == bgr(yp::blues(1.0)));
  const auto empty = yp::plot_confusion_matrix(ConfusionMatrix(3), {}, true);
  CHECK(centre_of(empty, yp::confusion_cell(3, 0, 0)) == std::array<int, 3>{255, 255, 255});
}
