// The oneDNN forward against the model's own (libtorch) forward: the same predictions to float
// rounding, on fresh models of two scales and on Ultralytics' own weights.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "cpu_forward.hpp"
#include "onednn_net.hpp"

#include "catch.hpp"

#include <cmath>
#include <filesystem>
#include <optional>

#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/predict/predictor.hpp"

namespace fs = std::filesystem;
namespace nn = yolotrain::nn;
using yolotrain::predict::detail::OnednnNet;

namespace {

const fs::path kBccdBest = fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics" / "bccd_yolov8n" / "best.pt";
const fs::path kBccdYolo11Best =
    fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics" / "bccd_yolo11n" / "best.pt";

// Largest difference of boxes (pixels) and of class scores between the two forwards.
std::pair<double, double> differences(nn::DetectionModel& model, OnednnNet& net, const at::Tensor& x) {
  c10::InferenceMode guard;
  const at::Tensor want = model->predict(x), got = net.predict(x);
  REQUIRE(got.sizes() == want.sizes());
  const double boxes = (got.slice(1, 0, 4) - want.slice(1, 0, 4)).abs().max().item<double>();
  const double scores = (got.slice(1, 4) - want.slice(1, 4)).abs().max().item<double>();
  return {boxes, scores};
}

// Below AVX2 oneDNN has only reference kernels for these layers, and the forward refuses them
// (the Predictor runs libtorch's there): nothing of this file can run.
bool without_avx2() {
  if (yolotrain::predict::detail::auto_cpu_forward().onednn) return false;  // the same rule
  WARN("skipped: oneDNN has no AVX2 here (" << yolotrain::predict::detail::cpu_isa_name() << ")");
  return true;
}

nn::DetectionModel fused(nn::DetectionModel model) {
  model->eval();
  model->fuse();
  return model;
}

// Ultralytics' best.pt, fused; nothing (after saying so) when ../shared is absent.
std::optional<nn::DetectionModel> fused_best_pt(const fs::path& pt = kBccdBest) {
  if (!fs::exists(pt)) {
    WARN("skipped: " << pt.string() << " is absent");
    return std::nullopt;
  }
  return fused(yolotrain::io::build_model(yolotrain::io::read_model_weights(pt), pt.string()));
}

// A fresh model's signal fades layer by layer (its predictions barely depend on the input, so
// they would hide a wrong layer): weights drawn to keep the activations' scale, biases nonzero.
nn::DetectionModel lively(nn::DetectionModel model) {
  c10::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    if (p.key().find("dfl") != std::string::npos) continue;  // DFL's fixed 0..15 weights
    at::Tensor& t = p.value();
    if (t.dim() == 4 && t.size(1) > 1) t.normal_(0, std::sqrt(2.0 / static_cast<double>(t[0].numel())));
    if (t.dim() == 1) t.normal_(0, 0.2);
  }
  return model;
}

}  // namespace

TEST_CASE("The oneDNN forward predicts what the model's forward predicts", "[predict][onednn]") {
  if (without_avx2()) return;
  at::manual_seed(0);
  // yolo11n: C3k2 with Bottlenecks and with C3k, C2PSA as a libtorch step, the depthwise head;
  // yolo11m: every C3k2 with C3k blocks.
  for (const std::string name : {"yolov8n", "yolov8s", "yolo11n", "yolo11m"}) {
    nn::DetectionModel model = lively(fused(nn::DetectionModel(nn::DetectionModelOptions(name + ".yaml").nc(5))));
    std::string why;
    const auto net = OnednnNet::compile(model, why);
    INFO(name << ": " << why);
    REQUIRE(net);
    for (const auto& shape : {std::vector<int64_t>{1, 3, 96, 160}, {2, 3, 64, 64}}) {
      const auto [boxes, scores] = differences(model, *net, at::rand(shape));
      INFO("input " << c10::str(shape) << ": boxes " << boxes << " px, scores " << scores);
      CHECK(boxes < 1e-3);
      CHECK(scores < 1e-5);
    }
    CHECK(net->plans() == 2);  // compile's probe at 64x64 and 96x160: batch 2 at 64x64 reuses the first
  }
}

TEST_CASE("The oneDNN forward gives the same predictions in every activation layout", "[predict][onednn]") {
  if (without_avx2()) return;
  // nChw8c and nChw16c put Concat parts in place (16c also pads the 5-class head output);
  // nhwc concatenates with oneDNN's concat primitive. Whatever this CPU prefers, each is run
  // where oneDNN has optimised kernels for it (nChw16c needs AVX-512; elsewhere it is refused).
  // YOLO11's C2PSA runs through libtorch: its input and output cross each layout both ways.
  at::manual_seed(2);
  for (const std::string name : {"yolov8n", "yolo11n"}) {
  nn::DetectionModel model = lively(fused(nn::DetectionModel(nn::DetectionModelOptions(name + ".yaml").nc(5))));
  const at::Tensor x = at::rand({1, 3, 64, 96});
  for (const auto layout : {OnednnNet::Layout::Blocked8, OnednnNet::Layout::Blocked16, OnednnNet::Layout::Nhwc}) {
    std::string why;
    const auto net = OnednnNet::compile(model, why, layout);
    INFO(name << " layout " << static_cast<int>(layout) << ": " << why);
    if (!net && layout == OnednnNet::Layout::Blocked16 && why.find("reference kernel") != std::string::npos) {
      WARN("nChw16c not run: " << why);
      continue;
    }
    REQUIRE(net);
    const auto [boxes, scores] = differences(model, *net, x);
    INFO("boxes " << boxes << " px, scores " << scores);
    CHECK(boxes < 1e-3);
    CHECK(scores < 1e-5);
    CHECK(net->activation_bytes() > 0);
  }
  }
}

TEST_CASE("The oneDNN forward runs Ultralytics' best.pt files (YOLOv8n, YOLO11n) as libtorch does",
          "[predict][onednn]") {
  if (without_avx2()) return;
  for (const fs::path& pt : {kBccdBest, kBccdYolo11Best}) {
    const auto best = fused_best_pt(pt);
    if (!best) continue;
    nn::DetectionModel model = *best;
    std::string why;
    const auto net = OnednnNet::compile(model, why);
    INFO(pt.string() << ": " << why);
    REQUIRE(net);
    at::manual_seed(1);
    const auto [boxes, scores] = differences(model, *net, at::rand({1, 3, 256, 320}));
    INFO("boxes " << boxes << " px, scores " << scores);
    CHECK(boxes < 1e-3);
    CHECK(scores < 1e-5);
  }
}

TEST_CASE("The oneDNN forward refuses a model it cannot run and says why", "[predict][onednn]") {
  if (without_avx2()) return;
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  model->eval();
  std::string why;
  CHECK_FALSE(OnednnNet::compile(model, why));  // BatchNorm not folded
  CHECK_THAT(why, Catch::Contains("fuse"));
  model->fuse();
  const auto net = OnednnNet::compile(model, why);
  REQUIRE(net);
  CHECK_THROWS_WITH(net->predict(at::rand({1, 3, 100, 64})), Catch::Contains("multiples of 32"));
  CHECK_THROWS_WITH(net->predict(at::rand({1, 3, 64, 64}, at::kDouble)), Catch::Contains("float32"));
}

TEST_CASE("The oneDNN forward keeps the primitives of at most 48 input sizes", "[predict][onednn]") {
  if (without_avx2()) return;
  nn::DetectionModel model = fused(nn::DetectionModel(nn::DetectionModelOptions("yolov8n.yaml").nc(2)));
  std::string why;
  const auto net = OnednnNet::compile(model, why);
  REQUIRE(net);
  c10::InferenceMode guard;
  const at::Tensor first = at::rand({1, 3, 32, 64});
  const at::Tensor want = net->predict(first);
  for (int64_t h = 1; h <= 50; ++h) net->predict(at::rand({1, 3, 32 * h, 32}));
  CHECK(net->plans() == 48);
  CHECK(net->activation_bytes() > 0);
  // 32x64's plan was the least recently used: rebuilt, it gives the same predictions.
  CHECK(at::allclose(net->predict(first), want));
}

TEST_CASE("The oneDNN forward names its layout and data type", "[predict][onednn]") {
  if (without_avx2()) return;
  nn::DetectionModel model = fused(nn::DetectionModel(nn::DetectionModelOptions("yolov8n.yaml").nc(2)));
  const auto label = [&](OnednnNet::Layout layout) {
    std::string why;
    const auto net = OnednnNet::compile(model, why, layout);
    return net ? net->label() : "refused: " + why;
  };
  CHECK(label(OnednnNet::Layout::Blocked8) == "oneDNN nChw8c");
  CHECK(label(OnednnNet::Layout::Nhwc) == "oneDNN nhwc");
  const std::string blocked16 = label(OnednnNet::Layout::Blocked16);  // refused without AVX-512
  CHECK((blocked16 == "oneDNN nChw16c" || blocked16.find("reference kernel") != std::string::npos));
  const std::string preferred = label(OnednnNet::Layout::Preferred);
  CHECK_THAT(preferred, Catch::StartsWith("oneDNN n"));
  CHECK(preferred == label(OnednnNet::Layout::Preferred));  // the probe answers alike every time
}

TEST_CASE("The bfloat16 forward runs where the CPU has native bfloat16 and stays near float32", "[predict][onednn]") {
  if (without_avx2()) return;
  const auto best = fused_best_pt();
  if (!best) return;
  nn::DetectionModel model = *best;
  std::string why;
  if (!OnednnNet::native_bf16()) {
    CHECK_FALSE(OnednnNet::compile(model, why, OnednnNet::Layout::Preferred, true));
    CHECK_THAT(why, Catch::Contains("bfloat16"));
    WARN("this CPU has no native bfloat16: only the refusal was checked");
    return;
  }
  at::manual_seed(1);
  const at::Tensor x = at::rand({1, 3, 256, 320});
  for (const auto layout : {OnednnNet::Layout::Nhwc, OnednnNet::Layout::Blocked16}) {
    const auto net = OnednnNet::compile(model, why, layout, true);
    REQUIRE(net);
    CHECK_THAT(net->label(), Catch::EndsWith(" bf16"));
    // bfloat16 keeps 8 bits of mantissa: measured here on best.pt at 256x320 (a random image, all
    // 1680 anchors), raw boxes within 0.83 px and class scores within 6e-5 of float32's; a wrong
    // layer is off by far more.
    const auto [boxes, scores] = differences(model, *net, x);
    INFO("boxes " << boxes << " px, scores " << scores);
    CHECK(boxes < 2.0);
    CHECK(scores < 0.02);
    CHECK(boxes > 0);  // it really ran in bfloat16
  }
}
