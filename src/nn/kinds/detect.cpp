// Detect rows [nc] over the feature levels; the last row. Ultralytics' parse_model sets
// `legacy = False` (YOLO11's and YOLO26's depthwise class branch) when the model has a C3k2.
#include "../layer_row.hpp"
#include "yolotrain/nn/detect.hpp"

namespace yolotrain::nn::detail {

// 8.4 appends the YAML's reg_max and end2end to the row (`args.extend([reg_max, end2end, ch])`) and
// initialises the box biases to 2.0 (8.3: 1.0, 16 DFL bins always).
DetectOptions detect_options(const LayerRow& row) {
  const ModelDef& def = row.model();
  return DetectOptions(row.integer_in(0, def.nc, 1, 100000), row.in_channels())
      .legacy(!row.model_has("C3k2"))
      .reg_max(def.reg_max)
      .end2end(def.end2end)
      .box_bias(def.ultralytics84 ? 2.0 : 1.0);
}

namespace {

LayerKind::Built build_detect(const LayerRow& row) { return {Detect(detect_options(row)).ptr(), 0}; }

}  // namespace

// Run by DetectionModel itself (its outputs are per level): no `forward`.
LayerKind detect_kind() { return {"Detect", kHead, {"Detect", "DFL", "DWConv", "Conv"}, build_detect, nullptr}; }

}  // namespace yolotrain::nn::detail
