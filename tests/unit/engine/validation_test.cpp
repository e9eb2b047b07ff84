#include <ATen/ATen.h>

#include "yolotrain/engine/validate.hpp"
#include "yolotrain/metrics/validator.hpp"

#include <catch2/catch.hpp>

namespace en = yolotrain::engine;

TEST_CASE("the validation table has Ultralytics' header and rows", "[engine]") {
  en::ValidationReport r;
  r.names = {"person", "car", "dog"};
  r.images = 128;
  r.instances_per_class = {254, 0, 675};
  r.images_per_class = {61, 0, 12};
  r.metrics.mp = 0.64;
  r.metrics.mr = 0.537;
  r.metrics.map50 = 0.605;
  r.metrics.map = 0.446;
  r.metrics.ap_class_index = {0, 2};
  r.metrics.p = {0.8, 0.5};
  r.metrics.r = {0.6, 0.474};
  r.metrics.ap50 = {0.7, 0.51};
  r.metrics.ap = {0.5, 0.392};
  CHECK(r.table(false) ==
        "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)\n"
        "                   all        128        929       0.64      0.537      0.605      0.446\n");
  CHECK(r.table(true) == r.table(false) +
                             "                person         61        254        0.8        0.6        0.7        0.5\n"
                             "                   dog         12        675        0.5      0.474       0.51      0.392\n");
}

TEST_CASE("images per class count each image once per class", "[engine]") {
  yolotrain::metrics::Validator v(3);
  const at::Tensor none = at::zeros({0, 6});
  v.update(none, at::tensor({0.f, 0.f, 2.f}), at::full({3, 4}, 0.5f), {64, 64}, {{64, 64}, std::nullopt});
  v.update(none, at::tensor({2.f}), at::full({1, 4}, 0.5f), {64, 64}, {{64, 64}, std::nullopt});
  v.update(none, at::zeros({0}), at::zeros({0, 4}), {64, 64}, {{64, 64}, std::nullopt});
  CHECK(v.nt_per_class() == std::vector<int64_t>{2, 0, 2});
  CHECK(v.nt_per_image() == std::vector<int64_t>{1, 0, 2});
}

TEST_CASE("validating a missing or foreign weights file says what is wrong", "[engine]") {
  en::TrainConfig cfg;
  cfg.model = "/nonexistent/best.ytckpt";
  CHECK_THROWS_WITH(en::validate(cfg), Catch::Contains("no such file"));
  CHECK_THROWS_WITH(en::val_config({"model=x.safetensors", "imgsz"}), Catch::Contains("key=value"));
  CHECK(en::val_config({"model=x.safetensors", "imgsz=320"}).imgsz == 320);
}
