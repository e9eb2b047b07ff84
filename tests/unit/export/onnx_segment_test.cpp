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

namespace {

// max |got - want| against want's range, over the part of the last-but-one... axis `axis` from
// `begin` to `end`.
std::pair<double, double> seg_part_diff(const at::Tensor& want, const at::Tensor& got, int64_t axis, int64_t begin,
                                        int64_t end) {
  const at::Tensor w = want.slice(axis, begin, end), g = got.slice(axis, begin, end);
  return {(g - w).abs().max().item<double>(), (w.max() - w.min()).item<double>()};
}

// YOLO26-seg's top-k rows [B, k, 6 + nm]: rows of `want` without a row of `got` that has its box
// (within box_tol), score (1e-4), class and coefficients (within coef_tol). Equal scores may come
// out of TopK in either order, so rows are matched, not compared by position; and the rows that tie
// with the k-th score (random weights give hundreds of equal scores) may be other anchors in each
// runtime, so rows at the lowest score are left out.
std::size_t unmatched_seg_rows(const at::Tensor& want, const at::Tensor& got, double box_tol, double coef_tol,
                               std::size_t* compared = nullptr) {
  std::size_t missing = 0;
  for (int64_t b = 0; b < want.size(0); ++b) {
    const double lowest = want[b].select(1, 4).min().item<double>();
    for (int64_t i = 0; i < want.size(1); ++i) {
      const at::Tensor row = want[b][i];
      if (row[4].item<double>() <= lowest + 1e-6) continue;
      if (compared) ++*compared;
      const at::Tensor close = ((got[b].slice(1, 0, 4) - row.slice(0, 0, 4)).abs().amax(1) <= box_tol) &
                               ((got[b].select(1, 4) - row[4]).abs() <= 1e-4) & (got[b].select(1, 5) == row[5]) &
                               ((got[b].slice(1, 6) - row.slice(0, 6)).abs().amax(1) <= coef_tol);
      if (!close.any().item<bool>()) ++missing;
    }
  }
  return missing;
}

}  // namespace

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
        CHECK(unmatched_seg_rows(out0, ort.outputs[0], 1e-4 * box_range, 1e-4 * coef_range, &compared) == 0);
        CHECK(compared >= 100);  // most rows are above the tie at the k-th score
        CHECK(unmatched_seg_rows(ort.outputs[0], out0, 1e-4 * box_range, 1e-4 * coef_range) == 0);
      } else {  // boxes and scores, then the mask coefficients: each within 1e-4 of its own range
        for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, split}, {split, out0.size(1)}}) {
          const auto [diff, range] = seg_part_diff(out0, ort.outputs[0], axis, begin, end);
          INFO("output0 channels " << begin << ".." << end << ": max diff " << diff << " of range " << range);
          CHECK(diff <= 1e-4 * range);
        }
      }
      const auto [diff, range] = seg_part_diff(protos, ort.outputs[1], 1, 0, protos.size(1));
      INFO("output1: max diff " << diff << " of range " << range);
      CHECK(diff <= 1e-4 * range);
      CHECK(out0.size(axis) == (e2e ? 6 : 8) + 32);
    }
  }
}
