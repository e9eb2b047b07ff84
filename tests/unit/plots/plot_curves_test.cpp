#include <ATen/ATen.h>

#include "yolotrain/metrics/det_metrics.hpp"
#include "yolotrain/plots/plot_curves.hpp"

#include "catch.hpp"

namespace yp = yolotrain::plots;

namespace {

// Pixels of exactly colour (b, g, r) in the image.
std::size_t count_color(const yolotrain::data::Image& im, int b, int g, int r) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 2 < im.pixels.size(); i += 3) {
    n += im.pixels[i] == b && im.pixels[i + 1] == g && im.pixels[i + 2] == r;
  }
  return n;
}

}  // namespace

TEST_CASE("the PR and confidence curves draw each class and the mean of real metrics", "[plots]") {
  // Two classes, each with a true and a false positive at different confidences.
  const at::Tensor tp = at::tensor({1, 0, 1, 0}).to(at::kBool).view({4, 1}).expand({4, 10}).contiguous();
  const auto m = yolotrain::metrics::det_metrics(tp, at::tensor({0.9f, 0.8f, 0.7f, 0.3f}),
                                                 at::tensor({0.f, 0.f, 1.f, 1.f}), at::tensor({0.f, 1.f}));
  REQUIRE(m.prec_values.defined());
  REQUIRE(m.prec_values.size(0) == 2);
  CHECK(m.prec_values[0][0].item<double>() == Approx(1.0));  // class 0: precision 1 at recall 0
  const auto pr = yp::plot_pr_curve(m, {"cat", "dog"});
  CHECK(pr.width == 2250);
  CHECK(pr.height == 1500);
  CHECK(count_color(pr, 255, 0, 0) > 1000);    // the mean, thick blue
  CHECK(count_color(pr, 180, 119, 31) > 200);  // class 0 in matplotlib's first colour
  CHECK(count_color(pr, 14, 127, 255) > 200);  // class 1 in its second
  for (auto which : {yp::Curve::F1, yp::Curve::Precision, yp::Curve::Recall}) {
    CAPTURE(yp::curve_file(which));
    CHECK(count_color(yp::plot_mc_curve(m, {"cat", "dog"}, which), 255, 0, 0) > 1000);
  }
  // No true positive: the axes alone, no failure.
  const auto empty = yolotrain::metrics::det_metrics(at::zeros({1, 10}, at::kBool), at::tensor({0.5f}),
                                                     at::tensor({0.f}), at::tensor({0.f}));
  CHECK(count_color(yp::plot_pr_curve(empty, {"cat"}), 255, 0, 0) == 0);
}
