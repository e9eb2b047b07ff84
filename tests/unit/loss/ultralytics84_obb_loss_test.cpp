// The OBB losses against Ultralytics' own on fixed head outputs (scripts/ultralytics84_obb_loss.py ->
// data/ultralytics84_obb_loss.json): 8.4.117's v8OBBLoss (yolov8n-obb's head: DFL, four terms with the
// angle's) and E2ELoss(model, v8OBBLoss) (yolo26n-obb's: reg_max 1, the L1 term; each branch and the
// weighted total), and 8.3.58's three-term v8OBBLoss (compat=8.3).
#include <ATen/ATen.h>

#include "ultralytics84_reference.hpp"
#include "yolotrain/loss/obb_loss.hpp"

#include "catch.hpp"

#include <cmath>
#include <fstream>
#include <vector>

namespace fs = std::filesystem;
namespace yl = yolotrain::loss;
using nlohmann::json;
using yolotrain::test::check_against_ultralytics;

namespace obb_loss_reference {

const json& obb_reference() {
  static const json ref = [] {
    json j;
    std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests/unit/loss/data/ultralytics84_obb_loss.json") >> j;
    return j;
  }();
  return ref;
}

constexpr int64_t kB = 2, kH = 64, kW = 96, kNc = 2;

// The script's obb_outputs: level l's raw output 2.5 sin(0.37 i + 0.9 l + 0.3) (float64, then float32);
// the angle 1.3 sin(0.23 i + 0.5), through OBB's (sigmoid - 0.25) pi unless OBB26.
yl::OBBOutputs outputs(int64_t reg_max, bool obb26) {
  yl::OBBOutputs out;
  int64_t anchors = 0, level = 0;
  for (int64_t s : {8, 16, 32}) {
    const int64_t c = 4 * reg_max + kNc, n = kB * c * (kH / s) * (kW / s);
    const at::Tensor i = at::arange(n, at::kDouble);
    out.feats.push_back((2.5 * at::sin(0.37 * i + 0.9 * static_cast<double>(level++) + 0.3))
                            .to(at::kFloat)
                            .view({kB, c, kH / s, kW / s}));
    anchors += (kH / s) * (kW / s);
  }
  const at::Tensor raw = (1.3 * at::sin(0.23 * at::arange(kB * anchors, at::kDouble) + 0.5)).to(at::kFloat);
  out.angle = (obb26 ? raw : (raw.sigmoid() - 0.25) * M_PI).view({kB, 1, anchors});
  return out;
}

yl::Targets targets() {
  std::vector<float> idx, cls, boxes;
  const json& images = obb_reference()["boxes"];
  for (std::size_t i = 0; i < images.size(); ++i) {
    for (const auto& row : images[i]) {
      idx.push_back(static_cast<float>(i));
      cls.push_back(row[0].get<float>());
      for (int k = 1; k < 6; ++k) boxes.push_back(row[k].get<float>());
    }
  }
  const auto n = static_cast<int64_t>(idx.size());
  return {at::tensor(idx), at::tensor(cls).view({n, 1}), at::tensor(boxes).view({n, 5}), {}};
}

yl::DetectionLossOptions head(int64_t reg_max, bool stal) {
  yl::DetectionLossOptions o;
  o.nc = kNc;
  o.reg_max = reg_max;
  o.stal = stal;
  return o;
}

}  // namespace obb_loss_reference

using namespace obb_loss_reference;

TEST_CASE("OBB loss equals Ultralytics 8.4's v8OBBLoss with the angle term", "[loss][obb]") {
  const yl::OBBLoss loss(head(16, true), {}, {});
  check_against_ultralytics(loss(outputs(16, false), targets()), obb_reference()["yolov8n-obb:8.4"]);
}

TEST_CASE("YOLO26-obb's loss equals Ultralytics 8.4's E2ELoss(v8OBBLoss) branch by branch", "[loss][obb]") {
  const json& ref = obb_reference()["yolo26n-obb:8.4"];
  const yl::OBBOutputs out = outputs(1, true);
  const yl::E2EOBBLoss loss(head(1, true), {}, {}, obb_reference()["epochs"].get<int64_t>());
  const yl::LossOutput both = loss(out, out, targets());
  check_against_ultralytics(yl::OBBLoss(head(1, true).with_topk(10, 0), {}, {})(out, targets()), ref["one2many"]);
  check_against_ultralytics(loss.one2one()(out, targets()), ref["one2one"]);
  const double total = ref["one2many"]["total"].get<double>() * ref["o2m"].get<double>() +
                       ref["one2one"]["total"].get<double>() * ref["o2o"].get<double>();
  CHECK(both.total.item<double>() == Approx(total).epsilon(1e-4));
}

TEST_CASE("OBB loss under compat=8.3 equals Ultralytics 8.3.58's three-term v8OBBLoss", "[loss][obb]") {
  yl::OBBLossOptions v83;
  v83.v84 = false;
  const yl::OBBLoss loss(head(16, false), {}, v83);
  CHECK(loss.items() == 3);
  check_against_ultralytics(loss(outputs(16, false), targets()), obb_reference()["yolov8n-obb:8.3"]);
}

TEST_CASE("OBB loss names what is wrong with the batch's boxes", "[loss][obb]") {
  const yl::OBBLoss loss(head(16, true), {}, {});
  yl::Targets t = targets();
  t.bboxes = t.bboxes.slice(1, 0, 4);  // a detection batch's xywh
  CHECK_THROWS_WITH(loss(outputs(16, false), t), Catch::Contains("[N, 5]") && Catch::Contains("OBB dataset"));
  yl::OBBOutputs no_angle = outputs(16, false);
  no_angle.angle = at::Tensor();
  CHECK_THROWS_WITH(loss(no_angle, targets()), Catch::Contains("angle"));
}

TEST_CASE("OBB loss without boxes is the class term alone, with a gradient to every output", "[loss][obb]") {
  const yl::OBBLoss loss(head(16, true), {}, {});
  yl::OBBOutputs out = outputs(16, false);
  for (auto& f : out.feats) f.requires_grad_(true);
  out.angle.requires_grad_(true);
  const yl::Targets none{at::zeros({0}), at::zeros({0, 1}), at::zeros({0, 5}), {}};
  const yl::LossOutput r = loss(out, none);
  CHECK(r.items[0].item<double>() == 0.0);
  CHECK(r.items[1].item<double>() > 0.0);
  CHECK(r.items[3].item<double>() == 0.0);
  r.total.backward();
  REQUIRE(out.angle.grad().defined());
  CHECK(out.feats[0].grad().abs().sum().item<double>() > 0);
}
