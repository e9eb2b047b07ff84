#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <opencv2/dnn.hpp>

#include "export_test_support.hpp"
#include "yolotrain/export/onnx_export.hpp"

#include "catch.hpp"

#include <fstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using yolotrain::test::TempDir;
using namespace yolotrain::test::export_support;  // NOLINT: the shared models, images and NMS

namespace {

at::Tensor run_opencv(const fs::path& model, const at::Tensor& input) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(model.string());
  const at::Tensor x = input.contiguous();
  const std::vector<int> dims(x.sizes().begin(), x.sizes().end());
  net.setInput(cv::Mat(static_cast<int>(dims.size()), dims.data(), CV_32F, x.data_ptr()));
  const cv::Mat out = net.forward();
  std::vector<std::int64_t> shape(out.size.p, out.size.p + out.dims);
  return at::from_blob(out.data, shape, at::kFloat).clone();
}

}  // namespace

// OpenCV 4.6 reads static graphs only: it refuses Shape on a dynamic input, which a dynamic
// export needs for its anchors (docs/export.md).
TEST_CASE("OpenCV's dnn module (4.6) loads the static export and agrees with libtorch", "[export]") {
  if (!fs::exists(kBest) || !fs::exists(kShared / "datasets" / "coco8")) {
    WARN("skipped: " << kBest.string() << " or ../shared/datasets/coco8 is absent");
    return;
  }
  TempDir tmp;
  std::size_t compared = 0;
  for (const std::string name : {"nc80", "bccd"}) {
    auto model = name == "nc80" ? random_model(80) : model_of(kBest);
    const auto images = images_of(name == "nc80" ? "coco8" : "bccd", 1);
    for (std::int64_t imgsz : {640, 320}) {
      for (int opset : {12, 17}) {
        INFO(name << " imgsz " << imgsz << " opset " << opset);
        yolotrain::exporter::OnnxExportOptions o;
        o.imgsz_h = o.imgsz_w = imgsz;
        o.opset = opset;
        const fs::path path = tmp.path() / "m.onnx";
        std::ofstream(path, std::ios::binary) << yolotrain::exporter::onnx_model(*model, o, {"t", "", model->names()});
        const at::Tensor x = input_of(images, imgsz, imgsz);
        at::Tensor expected;
        {
          c10::InferenceMode guard;
          expected = model->predict(x);
        }
        const Agreement a = compare(expected, run_opencv(path, x));
        UNSCOPED_INFO(name << " " << imgsz << " opset " << opset << ": max abs diff " << a.diff << " of range "
                           << a.range << ", " << a.boxes << " detections");
        CHECK(a.diff <= 1e-4 * a.range);
        CHECK(a.same_detections);
        compared += a.boxes;
      }
    }
  }
  CHECK(compared > 20);
}

// YOLO11's attention (MatMul over [B, heads, N, d] with Reshape through the input's Shape): what
// OpenCV 4.6's dnn does with it is recorded here (docs/export.md).
TEST_CASE("OpenCV's dnn module (4.6) and a static YOLO11n export", "[export][yolo11]") {
  TempDir tmp;
  auto model = random_model(80, "yolo11n.yaml");
  const auto images = images_of("coco8", 1);
  yolotrain::exporter::OnnxExportOptions o;
  o.imgsz_h = o.imgsz_w = 320;
  const fs::path path = tmp.path() / "m.onnx";
  std::ofstream(path, std::ios::binary) << yolotrain::exporter::onnx_model(*model, o, {"t", "", model->names()});
  const at::Tensor x = input_of(images, 320, 320);
  at::Tensor expected;
  {
    c10::InferenceMode guard;
    expected = model->predict(x);
  }
  const Agreement a = compare(expected, run_opencv(path, x));
  UNSCOPED_INFO("YOLO11n 320: max abs diff " << a.diff << " of range " << a.range);
  CHECK(a.diff <= 1e-4 * a.range);
  CHECK(a.same_detections);
}
