// Which forward a Predictor runs on the CPU: the values of PredictOptions::forward, the rule behind
// "auto" (the same on every call of one machine, and reported), and equal predictions on every path.
#include <ATen/ATen.h>

#include "cpu_forward.hpp"

#include "catch.hpp"

#include <filesystem>

#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/predict/predictor.hpp"

namespace fs = std::filesystem;
namespace yp = yolotrain::predict;
using yolotrain::predict::detail::OnednnNet;

namespace {

const fs::path kBestPt = fs::path(YOLOTRAIN_SHARED_DIR) / "weights" / "ultralytics" / "bccd_yolov8n" / "best.pt";
const fs::path kBccdImage =
    fs::path(YOLOTRAIN_SHARED_DIR) / "datasets" / "bccd" / "images" / "val" / "BloodImage_00000.jpg";

yp::PredictOptions cpu_at320(const std::string& forward, bool fuse = true) {
  yp::PredictOptions o;
  o.imgsz_h = o.imgsz_w = 320;
  o.device = "cpu";
  o.forward = forward;
  o.fuse = fuse;
  return o;
}

}  // namespace

TEST_CASE("forward= takes auto, libtorch and the oneDNN layouts, and names them when wrong", "[predict][forward]") {
  using yp::detail::parse_cpu_forward;
  CHECK_FALSE(parse_cpu_forward("libtorch").onednn);
  CHECK(parse_cpu_forward("onednn").layout == OnednnNet::Layout::Preferred);
  CHECK(parse_cpu_forward("onednn-nchw16c").layout == OnednnNet::Layout::Blocked16);
  CHECK(parse_cpu_forward("onednn-nchw8c").layout == OnednnNet::Layout::Blocked8);
  CHECK(parse_cpu_forward("onednn-nhwc").layout == OnednnNet::Layout::Nhwc);
  CHECK_FALSE(parse_cpu_forward("onednn-nhwc").bf16);
  CHECK(parse_cpu_forward("onednn-bf16").bf16);
  CHECK(parse_cpu_forward("onednn-nchw16c-bf16").layout == OnednnNet::Layout::Blocked16);
  for (const std::string bad : {"", "onnx", "onednn-", "onednn-bf16-nhwc", "onednn-nchw4c", "-bf16", "ONEDNN"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_cpu_forward(bad), yolotrain::engine::ConfigError);
    CHECK_THROWS_WITH(parse_cpu_forward(bad), Catch::Contains("auto, libtorch, or onednn"));
  }
}

TEST_CASE("auto is one rule over this CPU's instruction set", "[predict][forward]") {
  const auto a = yp::detail::auto_cpu_forward(), b = yp::detail::parse_cpu_forward("auto");
  CHECK(a.onednn == b.onednn);
  CHECK(a.layout == b.layout);
  CHECK(a.bf16 == b.bf16);
  CHECK_FALSE(a.bf16);  // bfloat16 is opt-in: it changes the boxes
  const std::string isa = yp::detail::cpu_isa_name();
  INFO("oneDNN's instruction set here: " << isa);
  CHECK(isa != "other");
}

TEST_CASE("A Predictor reports the forward it runs, and every path predicts the same boxes", "[predict][forward]") {
  if (!fs::exists(kBestPt) || !fs::exists(kBccdImage)) {
    WARN("skipped: " << kBestPt.string() << " or the bccd images are absent");
    return;
  }
  const yp::Predictor plain(kBestPt, cpu_at320("auto"));
  const auto rule = yp::detail::auto_cpu_forward();
  if (rule.onednn) {
    CHECK_THAT(plain.forward(), Catch::StartsWith("oneDNN "));
  } else {
    CHECK(plain.forward() == "libtorch fused");
  }
  CHECK(yp::Predictor(kBestPt, cpu_at320("auto")).forward() == plain.forward());
  CHECK(yp::Predictor(kBestPt, cpu_at320("libtorch")).forward() == "libtorch fused");
  CHECK(yp::Predictor(kBestPt, cpu_at320("libtorch", false)).forward() == "libtorch unfused");
  CHECK(yp::Predictor(kBestPt, cpu_at320("auto", false)).forward() == "libtorch unfused");
  if (rule.onednn) {  // AVX2 and newer: oneDNN has optimised kernels for these layouts
    CHECK(yp::Predictor(kBestPt, cpu_at320("onednn-nhwc")).forward() == "oneDNN nhwc");
    CHECK(yp::Predictor(kBestPt, cpu_at320("onednn-nchw8c")).forward() == "oneDNN nChw8c");
  }
  CHECK_THROWS_AS(yp::Predictor(kBestPt, cpu_at320("fastest")), yolotrain::engine::ConfigError);

  yp::Predictor reference(kBestPt, cpu_at320("libtorch"));
  const yp::Prediction want = reference.predict(kBccdImage);
  REQUIRE(want.boxes.size() > 3);
  for (const std::string path : {"auto", "onednn-nhwc", "onednn-nchw16c", "onednn-nchw8c"}) {
    yp::Predictor p(kBestPt, cpu_at320(path));
    const yp::Prediction got = p.predict(kBccdImage);
    INFO(path << " (" << p.forward() << ")");
    REQUIRE(got.boxes.size() == want.boxes.size());
    for (std::size_t i = 0; i < got.boxes.size(); ++i) {
      const auto &g = got.boxes[i], &w = want.boxes[i];
      CHECK(g.cls == w.cls);
      CHECK(std::abs(g.conf - w.conf) < 1e-5f);
      CHECK(std::max({std::abs(g.x1 - w.x1), std::abs(g.y1 - w.y1), std::abs(g.x2 - w.x2), std::abs(g.y2 - w.y2)}) <
            1e-3f);
    }
  }
}
