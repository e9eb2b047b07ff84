// OBB models to ONNX: Ultralytics' output0 with the rotated boxes and the angle after the classes
// ([N, 4 + nc + 1, A]: x y w h by dist2rbox, the class scores, the angle; YOLO26-obb's top-k rows
// [N, 300, 7]: x y w h, score, class, angle), as ONNX Runtime runs them, against libtorch's forward.
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

TEST_CASE("ONNX Runtime runs exported OBB models as libtorch does: output0 with the rotated boxes and angle",
          "[export][obb]") {
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    WARN("skipped: " << *why);
    return;
  }
  TempDir tmp;
  at::manual_seed(1);
  const at::Tensor still = at::rand({1, 3, 256, 256});
  const at::Tensor batch = at::rand({2, 3, 192, 320});  // a dynamic graph at another batch and shape
  for (const std::string yaml : {"yolov8n-obb.yaml", "yolo11n-obb.yaml", "yolo26n-obb.yaml"}) {
    auto model = random_model(3, yaml);
    for (const auto& [opset, dynamic] : std::vector<std::pair<int, bool>>{{17, false}, {12, true}}) {
      INFO(yaml << " opset " << opset << (dynamic ? " dynamic" : " static"));
      OnnxExportOptions o;
      o.imgsz_h = o.imgsz_w = 256;
      o.opset = opset;
      o.dynamic = dynamic;
      const fs::path path = tmp.path() / "obb.onnx";
      const std::string bytes = yolotrain::exporter::onnx_model(*model, o, {"test", "", model->names()});
      CHECK(bytes.find("obb") != std::string::npos);  // the task in the metadata
      std::ofstream(path, std::ios::binary) << bytes;
      const at::Tensor x = dynamic ? batch : still;
      at::Tensor out0;
      {
        c10::InferenceMode guard;
        out0 = model->head()->inference(model->forward_heads(x));
      }
      const auto ort = yolotrain::testing::run_onnxruntime(path, x, tmp.path());
      REQUIRE(ort.output_names == std::vector<std::string>{"output0"});
      REQUIRE(ort.outputs[0].sizes() == out0.sizes());
      if (model->head()->end2end()) {  // the same rows, within 1e-4 of the range of the boxes and of the angles
        const double box_range = (out0.slice(2, 0, 4).max() - out0.slice(2, 0, 4).min()).item<double>();
        const double angle_range = (out0.slice(2, 6).max() - out0.slice(2, 6).min()).item<double>();
        std::size_t compared = 0;
        CHECK(unmatched_topk_rows(out0, ort.outputs[0], 1e-4 * box_range, 1e-4 * angle_range, &compared) == 0);
        CHECK(compared >= 100);
        CHECK(out0.size(2) == 7);
      } else {  // boxes, scores and the angle: each within 1e-4 of its own range
        for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 7}, {7, 8}}) {
          const auto [diff, range] = part_diff(out0, ort.outputs[0], 1, begin, end);
          INFO("output0 channels " << begin << ".." << end << ": max diff " << diff << " of range " << range);
          CHECK(diff <= 1e-4 * range);
        }
        CHECK(out0.size(1) == 4 + 3 + 1);
      }
    }
  }
}
