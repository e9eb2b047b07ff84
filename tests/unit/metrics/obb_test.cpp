// Oriented boxes' overlap (ProbIoU) and rotated NMS against Ultralytics 8.4.117's own
// (scripts/ultralytics84_obb_metrics.py: batch_probiou, probiou plain / CIoU / with a floor,
// TorchNMS.fast_nms with batch_probiou on 300 crowded boxes).
#include <ATen/ATen.h>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/obb.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
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
