// Ultralytics 8.4.117's losses on one fixed batch, computed by Ultralytics itself
// (scripts/ultralytics84_loss.py -> data/ultralytics84_loss.json): E2ELoss of the genuine
// bccd_yolo26n best.pt (both branches, the L1 term of reg_max 1, the weights after 0..11
// update()s) and 8.4's v8DetectionLoss (STAL) of bccd_yolo11n. Same image formula, same boxes,
// models in train mode from the same files.
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "yolotrain/error.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/loss/e2e_loss.hpp"
#include "yolotrain/nn.hpp"

#include "catch.hpp"
#include "ultralytics84_reference.hpp"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace yl = yolotrain::loss;
namespace nn = yolotrain::nn;
using nlohmann::json;
using yolotrain::test::check_against_ultralytics;
using yolotrain::test::train_mode;
using yolotrain::test::ultralytics84_image;

namespace {

const fs::path kWeights = yolotrain::test::ultralytics_weights();

json reference() {
  return json::parse(std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests" / "unit" / "loss" / "data" /
                                   "ultralytics84_loss.json"));
}

yl::Targets targets(const json& rows) {
  std::vector<float> flat;
  for (const auto& r : rows) {
    for (const auto& v : r) flat.push_back(v.get<float>());
  }
  const at::Tensor t = at::tensor(flat).view({-1, 6});
  return {t.select(1, 0), t.slice(1, 1, 2), t.slice(1, 2, 6)};
}

}  // namespace

TEST_CASE("E2ELoss of YOLO26n equals Ultralytics 8.4's on a fixed batch, at every epoch's weights", "[loss][yolo26]") {
  if (!fs::exists(kWeights / "bccd_yolo26n" / "best.pt")) {
    WARN("skipped: " << (kWeights / "bccd_yolo26n" / "best.pt").string() << " is absent");
    return;
  }
  const json ref = reference();
  const json& e2e = ref["yolo26n_e2e"];
  CHECK(e2e["one2one"]["names"][2] == "l1_loss");  // reg_max 1: the L1 term in the DFL's place
  nn::DetectionModel model = train_mode("bccd_yolo26n");
  torch::NoGradGuard no_grad;
  const nn::HeadOutputs heads =
      model->forward_heads(ultralytics84_image(ref["batch"], ref["imgsz"][0], ref["imgsz"][1]));
  const yl::Targets t = targets(ref["targets"]);
  yl::DetectionLossOptions options = yl::DetectionLossOptions::of(model);
  options.stal = true;
  yl::E2ELoss loss(options, {}, ref["epochs"].get<int64_t>());
  {
    INFO("one-to-many branch (topk 10)");
    check_against_ultralytics(loss.one2many()(heads.one2many, t), e2e["one2many"]);
  }
  {
    INFO("one-to-one branch (topk 7, topk2 1)");
    check_against_ultralytics(loss.one2one()(heads.one2one, t), e2e["one2one"]);
  }
  for (const json& u : e2e["updates"]) {
    const auto epoch = u["updates"].get<int64_t>();
    INFO("after " << epoch << " update()s");
    loss.set_epoch(epoch);
    CHECK(loss.o2m() == u["o2m"].get<double>());  // the same double arithmetic
    CHECK(loss.o2o() == u["o2o"].get<double>());
    check_against_ultralytics(loss(heads.one2many, heads.one2one, t), u);
  }
}

TEST_CASE("8.4's v8DetectionLoss (STAL) of YOLO11n equals Ultralytics' on a fixed batch", "[loss]") {
  if (!fs::exists(kWeights / "bccd_yolo11n" / "best.pt")) {
    WARN("skipped: " << (kWeights / "bccd_yolo11n" / "best.pt").string() << " is absent");
    return;
  }
  const json ref = reference();
  nn::DetectionModel model = train_mode("bccd_yolo11n");
  torch::NoGradGuard no_grad;
  const auto outputs = model->forward(ultralytics84_image(ref["batch"], ref["imgsz"][0], ref["imgsz"][1]));
  yl::DetectionLossOptions options = yl::DetectionLossOptions::of(model);
  options.stal = true;
  check_against_ultralytics(yl::DetectionLoss(options)(outputs, targets(ref["targets"])), ref["yolo11n_v8_stal"]);
  // Without STAL the three boxes below 8 px get no anchors: a different loss.
  const double without = yl::DetectionLoss(model)(outputs, targets(ref["targets"])).total.item<double>();
  CHECK(std::abs(without - ref["yolo11n_v8_stal"]["total"].get<double>()) > 1e-2);
}

// cls_pw: the weights Ultralytics' DetectionTrainer makes from class counts (one class with none),
// and its v8DetectionLoss of a model carrying them; the device step's class term weighs alike, its
// gradient too.
TEST_CASE("cls_pw: 8.4's class weights, and v8DetectionLoss with them, equal Ultralytics'", "[loss]") {
  const json ref = reference();
  const json& cw = ref["class_weights"];
  const at::Tensor w = yl::class_weights_for(cw["counts"].get<std::vector<int64_t>>(), cw["power"].get<double>());
  REQUIRE(w.numel() == 3);
  for (int64_t c = 0; c < 3; ++c) CHECK(w[c].item<double>() == Approx(cw["weights"][c].get<double>()).epsilon(1e-6));
  CHECK_FALSE(yl::class_weights_for({412, 0, 57}, 0.0).defined());  // cls_pw=0: no weights
  CHECK_FALSE(yl::class_weights_for({0, 0, 0}, 0.5).defined());     // nothing counted
  CHECK_THROWS_WITH(yl::class_weights_for({1, 2}, 1.5), Catch::Contains("outside [0, 1]"));
  if (!fs::exists(kWeights / "bccd_yolo11n" / "best.pt")) {
    WARN("the loss part skipped: " << (kWeights / "bccd_yolo11n" / "best.pt").string() << " is absent");
    return;
  }
  nn::DetectionModel model = train_mode("bccd_yolo11n");
  std::vector<at::Tensor> outputs;
  {
    torch::NoGradGuard no_grad;
    outputs = model->forward(ultralytics84_image(ref["batch"], ref["imgsz"][0], ref["imgsz"][1]));
  }
  model->set_class_weights(w);
  yl::DetectionLossOptions options = yl::DetectionLossOptions::of(model);  // reads the model's, as Ultralytics
  options.stal = true;
  const auto gradients = [&](bool device_step) {
    std::vector<at::Tensor> leaves;
    for (const auto& o : outputs) leaves.push_back(o.detach().requires_grad_());
    yl::DetectionLossOptions o = options;
    o.device_step = device_step;
    const yl::LossOutput out = yl::DetectionLoss(o)(leaves, targets(ref["targets"]));
    check_against_ultralytics(out, ref["yolo11n_v8_stal_class_weights"]);
    out.total.backward();
    return leaves;
  };
  const auto sparse = gradients(false), dense = gradients(true);
  for (size_t i = 0; i < sparse.size(); ++i) CHECK(at::allclose(sparse[i].grad(), dense[i].grad(), 1e-4, 1e-6));
}

TEST_CASE("E2ELoss' one-to-many weight falls from 0.8 to 0.1 over the run's epochs", "[loss]") {
  CHECK(yl::E2ELoss::o2m_after(0, 10) == Approx(0.8));
  CHECK(yl::E2ELoss::o2m_after(9, 10) == Approx(0.1));
  CHECK(yl::E2ELoss::o2m_after(50, 10) == Approx(0.1));
  CHECK(yl::E2ELoss::o2m_after(1, 1) == Approx(0.1));  // one epoch: max(epochs - 1, 1)
  CHECK_THROWS_AS(yl::E2ELoss(yl::DetectionLossOptions{}, {}, 0), yolotrain::Error);
  yl::E2ELoss loss(yl::DetectionLossOptions{}, {}, 3);
  CHECK_THROWS_WITH(loss({at::zeros({1, 144, 2, 2})}, {}, yl::Targets{}), Catch::Contains("one-to-one"));
}
