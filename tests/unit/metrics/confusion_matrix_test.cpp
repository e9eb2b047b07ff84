#include <ATen/ATen.h>

#include "yolotrain/metrics/confusion_matrix.hpp"
#include "yolotrain/metrics/validator.hpp"

#include "catch.hpp"

#include <vector>

namespace ym = yolotrain::metrics;

namespace {

at::Tensor rows(std::vector<std::vector<float>> v, std::int64_t width) {
  std::vector<float> flat;
  for (const auto& r : v) flat.insert(flat.end(), r.begin(), r.end());
  return at::tensor(flat).view({static_cast<std::int64_t>(v.size()), width});
}

at::Tensor classes(std::vector<float> v) { return at::tensor(v); }

}  // namespace

// Five images whose counts are worked out by hand (nc 2; index 2 is the background).
TEST_CASE("the confusion matrix counts a hand-made case as Ultralytics 8.2 does", "[metrics]") {
  ym::ConfusionMatrix cm(2, 0.001);  // validation's conf 0.001 becomes 0.25
  // 1: A (0) found; B (1) found as class 0; C (0) missed; a detection of nothing; one below conf.
  cm.process_batch(rows({{0, 0, 10, 10, .9f, 0}, {20, 20, 30, 31, .8f, 0}, {80, 80, 90, 90, .7f, 1},
                         {0, 0, 10, 11, .1f, 1}},
                        6),
                   rows({{0, 0, 10, 10}, {20, 20, 30, 30}, {50, 50, 60, 60}}, 4), classes({0, 1, 0}));
  // 2: no labels: the confident detection is background, the other ignored.
  cm.process_batch(rows({{5, 5, 9, 9, .5f, 1}, {5, 5, 9, 9, .2f, 0}}, 6), at::zeros({0, 4}), at::zeros({0}));
  // 3: no detections: the label is missed.
  cm.process_batch(at::Tensor(), rows({{0, 0, 4, 4}}, 4), classes({1}));
  // 4: nothing matches: the label is missed and (8.2's rule) the stray detection is not counted.
  cm.process_batch(rows({{100, 100, 110, 110, .9f, 0}}, 6), rows({{0, 0, 10, 10}}, 4), classes({0}));
  // 5: two detections of one object: the better one matches, the other is background.
  cm.process_batch(rows({{0, 0, 10, 9, .8f, 0}, {0, 0, 10, 10, .9f, 0}}, 6), rows({{0, 0, 10, 10}}, 4), classes({0}));

  const std::vector<std::vector<double>> expected = {
      // true: 0  1  background        predicted:
      {2, 1, 1},  // 0
      {0, 0, 2},  // 1
      {2, 1, 0},  // background
  };
  for (std::int64_t p = 0; p < 3; ++p) {
    for (std::int64_t t = 0; t < 3; ++t) {
      INFO("predicted " << p << ", true " << t);
      CHECK(cm.at(p, t) == expected[p][t]);
    }
  }
  const auto [tp, fp] = cm.tp_fp();
  CHECK(tp == std::vector<double>{2, 0});
  CHECK(fp == std::vector<double>{2, 2});
  CHECK(cm.to_csv({"cat", "dog"}) ==
        "Predicted \\ True,cat,dog,background\ncat,2,1,1\ndog,0,0,2\nbackground,2,1,0\n");
  CHECK(cm.to_csv({"cat", "dog"}, true) ==
        "Predicted \\ True,cat,dog,background\ncat,0.5000,0.5000,0.3333\ndog,0.0000,0.0000,0.6667\n"
        "background,0.5000,0.5000,0.0000\n");
}

TEST_CASE("the validator fills the confusion matrix from its images", "[metrics]") {
  ym::Validator v(2);
  // One image 320x320 (no letterbox): a label of class 1 found as class 1, one of class 0 missed.
  const at::Tensor pred = rows({{32, 32, 96, 96, .9f, 1}}, 6);
  const at::Tensor bboxes = rows({{0.2f, 0.2f, 0.2f, 0.2f}, {0.8f, 0.8f, 0.1f, 0.1f}}, 4);
  v.update(pred, classes({1, 0}), bboxes, {320, 320}, {{320, 320}, std::nullopt});
  v.update(at::zeros({0, 6}), classes({0}), rows({{0.5f, 0.5f, 0.2f, 0.2f}}, 4), {320, 320},
           {{320, 320}, std::nullopt});
  REQUIRE(v.confusion_matrix() != nullptr);
  CHECK(v.confusion_matrix()->at(1, 1) == 1);
  CHECK(v.confusion_matrix()->at(2, 0) == 2);
  v.reset();
  CHECK(v.confusion_matrix()->at(2, 0) == 0);
  CHECK(ym::Validator(0).confusion_matrix() == nullptr);
}
