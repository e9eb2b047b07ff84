// Segmentation models to ONNX: Ultralytics' two outputs — output0 (boxes, classes and the 32 mask
// coefficients; YOLO26-seg's top-k rows [N, 300, 38]) and output1 (the prototypes) — as ONNX Runtime
// runs them, against libtorch's forward.
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

TEST_CASE("ONNX Runtime runs exported seg models as libtorch does: output0 with mask coefficients, output1 protos",
          "[export][segment]") {
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    WARN("skipped: " << *why);
    return;
  }
  TempDir tmp;
  at::manual_seed(1);
  const at::Tensor still = at::rand({1, 3, 256, 256});
  const at::Tensor batch = at::rand({2, 3, 192, 320});  // a dynamic graph at another batch and shape
  for (const std::string yaml : {"yolov8n-seg.yaml", "yolo11n-seg.yaml", "yolo26n-seg.yaml"}) {
    auto model = random_model(4, yaml);
    for (const auto& [opset, dynamic] : std::vector<std::pair<int, bool>>{{17, false}, {12, true}}) {
      INFO(yaml << " opset " << opset << (dynamic ? " dynamic" : " static"));
      OnnxExportOptions o;
      o.imgsz_h = o.imgsz_w = 256;
      o.opset = opset;
      o.dynamic = dynamic;
      const fs::path path = tmp.path() / "seg.onnx";
      std::ofstream(path, std::ios::binary) << yolotrain::exporter::onnx_model(*model, o, {"test", "", model->names()});
      const at::Tensor x = dynamic ? batch : still;
      at::Tensor out0, protos;
      {
        c10::InferenceMode guard;
        const auto heads = model->forward_heads(x);
        out0 = model->head()->inference(heads);
        protos = heads.proto;
      }
      const auto ort = yolotrain::testing::run_onnxruntime(path, x, tmp.path());
      REQUIRE(ort.output_names == std::vector<std::string>{"output0", "output1"});
      REQUIRE(ort.outputs[0].sizes() == out0.sizes());
      REQUIRE(ort.outputs[1].sizes() == protos.sizes());
      const bool e2e = model->head()->end2end();
      const int64_t axis = e2e ? 2 : 1, split = e2e ? 6 : 4 + 4;
      if (e2e) {  // the same rows, each within 1e-4 of the range of its boxes and of its coefficients
        const double box_range = (out0.slice(2, 0, 4).max() - out0.slice(2, 0, 4).min()).item<double>();
        const double coef_range = (out0.slice(2, 6).max() - out0.slice(2, 6).min()).item<double>();
        std::size_t compared = 0;
        CHECK(unmatched_topk_rows(out0, ort.outputs[0], 1e-4 * box_range, 1e-4 * coef_range, &compared) == 0);
        CHECK(compared >= 100);  // most rows are above the tie at the k-th score
        CHECK(unmatched_topk_rows(ort.outputs[0], out0, 1e-4 * box_range, 1e-4 * coef_range) == 0);
      } else {  // boxes and scores, then the mask coefficients: each within 1e-4 of its own range
        for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, split}, {split, out0.size(1)}}) {
          const auto [diff, range] = part_diff(out0, ort.outputs[0], axis, begin, end);
          INFO("output0 channels " << begin << ".." << end << ": max diff " << diff << " of range " << range);
          CHECK(diff <= 1e-4 * range);
        }
      }
      const auto [diff, range] = part_diff(protos, ort.outputs[1], 1, 0, protos.size(1));
      INFO("output1: max diff " << diff << " of range " << range);
      CHECK(diff <= 1e-4 * range);
      CHECK(out0.size(axis) == (e2e ? 6 : 8) + 32);
    }
  }
}
