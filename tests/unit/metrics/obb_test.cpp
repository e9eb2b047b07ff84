// Oriented boxes' overlap (ProbIoU) and rotated NMS against Ultralytics 8.4.117's own
// (scripts/ultralytics84_obb_metrics.py: batch_probiou, probiou plain / CIoU / with a floor,
// TorchNMS.fast_nms with batch_probiou on 300 crowded boxes, non_max_suppression(rotated=True) of an OBB
// head's output as its validator and predictor call it), and the validator's rotated matching.
#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/metrics/obb.hpp"
#include "yolotrain/metrics/validator.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

namespace ym = yolotrain::metrics;

namespace {

at::Tensor tensor_of(const nlohmann::json& j) {
  return at::tensor(j["values"].get<std::vector<float>>()).view(j["shape"].get<std::vector<int64_t>>());
}

nlohmann::json reference() {
  return nlohmann::json::parse(std::ifstream(std::filesystem::path(YOLOTRAIN_SOURCE_DIR) /
                                             "tests/unit/metrics/data/ultralytics84_obb_metrics.json"));
}

double worst(const at::Tensor& got, const at::Tensor& want) { return (got - want).abs().max().item<double>(); }

}  // namespace

TEST_CASE("ProbIoU of oriented boxes is Ultralytics' (all pairs, row by row, CIoU, floor)", "[metrics][obb]") {
  const nlohmann::json ref = reference();
  const at::Tensor a = tensor_of(ref["a"]), b = tensor_of(ref["b"]), c = tensor_of(ref["c"]);
  const at::Tensor nine = a.slice(0, 0, 9);
  CHECK(worst(ym::batch_probiou(a, b), tensor_of(ref["batch_probiou"])) < 1e-5);
  CHECK(worst(ym::probiou(nine, c), tensor_of(ref["probiou"])) < 1e-5);
  CHECK(worst(ym::probiou(nine, c, true), tensor_of(ref["probiou_ciou"])) < 1e-5);
  CHECK(worst(ym::probiou(nine, c, false, 1e-7, 1.0), tensor_of(ref["probiou_floor"])) < 1e-5);
  // A box against itself overlaps fully, whatever its angle; half a turn later it is the same box.
  const at::Tensor box = at::tensor({50.0f, 40.0f, 30.0f, 10.0f, 0.3f}).view({1, 5});
  CHECK(ym::batch_probiou(box, box).item<float>() == Approx(1.0f).margin(1e-3));
  const at::Tensor turned = at::tensor({50.0f, 40.0f, 30.0f, 10.0f, 0.3f + static_cast<float>(M_PI)}).view({1, 5});
  CHECK(ym::batch_probiou(box, turned).item<float>() == Approx(1.0f).margin(1e-3));
  CHECK_THROWS_AS(ym::batch_probiou(at::zeros({2, 4}), box), yolotrain::Error);
}

TEST_CASE("rotated NMS keeps what Ultralytics' fast NMS with ProbIoU keeps", "[metrics][obb]") {
  const nlohmann::json ref = reference();
  const at::Tensor boxes = tensor_of(ref["crowd"]), scores = tensor_of(ref["scores"]);
  for (const auto& [key, iou] : std::vector<std::pair<std::string, double>>{{"nms_05", 0.5}, {"nms_07", 0.7}}) {
    INFO(key);
    const at::Tensor kept = ym::nms_rotated(boxes, scores, iou);
    const std::vector<int64_t> want = ref[key].get<std::vector<int64_t>>();
    CHECK(std::vector<int64_t>(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel()) == want);
  }
  CHECK(ym::nms_rotated(at::zeros({0, 5}), at::zeros({0}), 0.5).numel() == 0);
}

TEST_CASE("non_max_suppression of an OBB head's output equals Ultralytics' rotated=True", "[metrics][obb]") {
  const nlohmann::json ref = reference();
  const at::Tensor head = tensor_of(ref["head"]);
  for (const auto& [key, conf, multi] :
       std::vector<std::tuple<std::string, double, bool>>{{"nms_val", 0.01, true}, {"nms_predict", 0.25, false}}) {
    INFO(key);
    ym::NmsOptions o;
    o.conf = conf, o.iou = 0.7, o.multi_label = multi, o.nc = 3, o.rotated = true;
    const std::vector<at::Tensor> out = ym::non_max_suppression(head, o);
    REQUIRE(out.size() == 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const at::Tensor want = tensor_of(ref[key][i]);
      REQUIRE(out[i].sizes() == want.sizes());  // rows x y w h conf cls angle, in Ultralytics' order
      CHECK(worst(out[i], want) < 1e-4);
    }
  }
}

TEST_CASE("the validator matches oriented boxes by ProbIoU, in the network input or (8.3) the image",
          "[metrics][obb]") {
  // Two labels in a 100 x 200 (h x w) input, normalized xywhr; predictions x y w h conf cls angle.
  const at::Tensor gt = at::tensor({0.25f, 0.5f, 0.2f, 0.3f, 0.4f, 0.75f, 0.5f, 0.1f, 0.4f, -0.3f}).view({2, 5});
  const at::Tensor cls = at::tensor({0.f, 1.f});
  const at::Tensor exact = at::tensor({50.f, 50.f, 40.f, 30.f, 0.9f, 0.f, 0.4f,  // the first label
                                       150.f, 50.f, 20.f, 40.f, 0.8f, 1.f, -0.3f + static_cast<float>(M_PI)})
                               .view({2, 7});  // the second, half a turn on: the same box
  for (const auto rules : {ym::UltralyticsRules::V84, ym::UltralyticsRules::V83}) {
    ym::Validator v(2, rules);
    v.update_rotated(exact, cls, gt, {100, 200}, ym::ImageInfo{{50, 100}, std::nullopt});
    CHECK(v.tp().all().item<bool>());  // every prediction right at every IoU threshold
    CHECK(v.finalize().map == Approx(0.995).margin(1e-3));
  }
  ym::Validator v(2);
  at::Tensor off = exact.clone();
  off[0][0] = 95.f;  // the first moved off its label: ProbIoU below every threshold
  v.update_rotated(off, cls, gt, {100, 200}, ym::ImageInfo{{100, 200}, std::nullopt});
  const at::Tensor tp = v.tp();
  CHECK_FALSE(tp[0].any().item<bool>());
  CHECK(tp[1].all().item<bool>());
  REQUIRE(v.confusion_matrix());
  CHECK_THROWS_WITH(v.update_rotated(exact.slice(1, 0, 6), cls, gt, {100, 200}, {}), Catch::Contains("[n, 7]"));
}
