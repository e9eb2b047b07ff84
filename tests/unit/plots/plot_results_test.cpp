#include "yolotrain/plots/plot_results.hpp"

#include "catch.hpp"

#include "yolotrain/error.hpp"

namespace yp = yolotrain::plots;

TEST_CASE("gaussian_filter1d is scipy's (reflect, truncate 4)", "[plots]") {
  // scipy.ndimage.gaussian_filter1d's documented examples.
  const auto one = yp::gaussian_filter1d({1, 2, 3, 4, 5}, 1);
  const std::vector<double> want1{1.42704095, 2.06782203, 3.0, 3.93217797, 4.57295905};
  const auto four = yp::gaussian_filter1d({1, 2, 3, 4, 5}, 4);
  const std::vector<double> want4{2.91948343, 2.95023502, 3.0, 3.04976498, 3.08051657};
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(one[i] == Approx(want1[i]).margin(1e-7));
    CHECK(four[i] == Approx(want4[i]).margin(1e-7));
  }
  CHECK(yp::gaussian_filter1d({}, 3).empty());
  CHECK(yp::gaussian_filter1d({2.5}, 3) == std::vector<double>{2.5});
}

TEST_CASE("plot_results draws every epoch of a results.csv and names what is missing", "[plots]") {
  std::string csv =
      "epoch,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),metrics/mAP50(B),"
      "metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n";
  for (int e = 1; e <= 12; ++e) {
    const double f = 1.0 / e;
    csv += std::to_string(e) + "," + std::to_string(3 * f) + "," + std::to_string(2 * f) + "," + std::to_string(f + 1) +
           "," + std::to_string(1 - f) + ",0.5,0.4,0.2," + std::to_string(3 * f) + ",1,1,0.01,0.01,0.01\n";
  }
  const auto im = yp::plot_results(csv);
  CHECK(im.width == 2400);
  CHECK(im.height == 1200);
  // The first panel's series (matplotlib's blue) is drawn: some pixels carry it.
  std::size_t blue = 0;
  for (int y = 0; y < 600; ++y) {
    for (int x = 0; x < 480; ++x) {
      const auto* p = im.pixel(y, x);
      if (p[0] == 180 && p[1] == 119 && p[2] == 31) ++blue;
    }
  }
  CHECK(blue > 200);
  CHECK_THROWS_WITH(yp::plot_results("epoch,lr/pg0\n1,2\n"), Catch::Contains("no loss and metric columns"));
}

// Ultralytics 8.4 lays the panels out from the columns' names: a segmentation run's ten losses and
// eight metrics are 2 x 9 panels of a 20 x 6 in figure.
TEST_CASE("plot_results of a segmentation run has a panel per loss and metric column", "[plots]") {
  std::string header = "epoch";
  for (const char* split : {"train", "val"}) {
    for (const char* t : {"box_loss", "seg_loss", "cls_loss", "dfl_loss", "sem_loss"})
      header += std::string(",") + split + "/" + t;
    if (std::string(split) == "train") {
      for (const char* k : {"B", "M"}) {
        for (const char* m : {"precision", "recall", "mAP50", "mAP50-95"}) {
          header += std::string(",metrics/") + m + "(" + k + ")";
        }
      }
    }
  }
  std::string csv = header + ",lr/pg0,lr/pg1,lr/pg2\n";
  for (int e = 1; e <= 3; ++e) {
    csv += std::to_string(e);
    for (int c = 0; c < 21; ++c) csv += "," + std::to_string(1.0 / (e + c));
    csv += "\n";
  }
  const auto im = yp::plot_results(csv);
  CHECK(im.width == 4000);
  CHECK(im.height == 1200);
}
