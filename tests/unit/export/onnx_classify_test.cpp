// Classification models to ONNX (issue 54): Ultralytics' output0, the softmax over the classes
// ([N, nc]: Classify in export mode), and its metadata (task classify, stride 1), as ONNX Runtime runs
// them, against libtorch's forward.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "export_test_support.hpp"
#include "onnxruntime_runner.hpp"
#include "yolotrain/export/onnx_export.hpp"
#include "yolotrain/nn/detection_model.hpp"

#include "catch.hpp"

#include <fstream>

#include "test_support.hpp"

namespace fs = std::filesystem;
using yolotrain::exporter::OnnxExportOptions;
using yolotrain::test::TempDir;
using namespace yolotrain::test::export_support;  // NOLINT: the shared models and inputs

TEST_CASE("ONNX Runtime runs exported classification models as libtorch does: output0 the probabilities",
          "[export][classify]") {
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    WARN("skipped: " << *why);
    return;
  }
  TempDir tmp;
  at::manual_seed(1);
  const at::Tensor still = at::rand({1, 3, 224, 224});
  const at::Tensor batch = at::rand({3, 3, 96, 160});  // a dynamic graph at another batch and shape
  for (const std::string yaml : {"yolov8n-cls.yaml", "yolo11n-cls.yaml", "yolo26n-cls.yaml"}) {
    auto model = random_model(5, yaml);
    for (const auto& [opset, dynamic] : std::vector<std::pair<int, bool>>{{17, false}, {12, true}}) {
      INFO(yaml << " opset " << opset << (dynamic ? " dynamic" : " static"));
      OnnxExportOptions o;
      o.imgsz_h = o.imgsz_w = 224;
      o.opset = opset;
      o.dynamic = dynamic;
      const fs::path path = tmp.path() / "cls.onnx";
      const std::string bytes = yolotrain::exporter::onnx_model(*model, o, {"test", "", model->names()});
      CHECK(bytes.find("classify") != std::string::npos);  // the task in the metadata
      std::ofstream(path, std::ios::binary) << bytes;
      const at::Tensor x = dynamic ? batch : still;
      at::Tensor probs;
      {
        c10::InferenceMode guard;
        probs = model->predict(x);
      }
      const auto ort = yolotrain::testing::run_onnxruntime(path, x, tmp.path());
      REQUIRE(ort.output_names == std::vector<std::string>{"output0"});
      REQUIRE(ort.outputs[0].sizes() == probs.sizes());
      CHECK(ort.outputs[0].sum(1).sub(1).abs().max().item<double>() < 1e-5);
      INFO("max difference " << (ort.outputs[0] - probs).abs().max().item<double>());
      CHECK((ort.outputs[0] - probs).abs().max().item<double>() < 1e-5);
    }
  }
}
