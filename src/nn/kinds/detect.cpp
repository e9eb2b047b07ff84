// Detect rows [nc] over the feature levels; the last row. Ultralytics 8.3 parse_model sets
// `legacy = False` (YOLO11's depthwise class branch) when the model has a C3k2.
#include "../layer_row.hpp"
#include "yolotrain/nn/detect.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_detect(const LayerRow& row) {
  const auto o =
      DetectOptions(row.integer_in(0, row.model().nc, 1, 100000), row.in_channels()).legacy(!row.model_has("C3k2"));
  return {Detect(o).ptr(), 0};
}

// Run by DetectionModel itself (its outputs are per level): no `forward`.
LayerKind detect_kind() { return {"Detect", kHead, {"Detect", "DFL", "DWConv", "Conv"}, build_detect, nullptr}; }

}  // namespace yolotrain::nn::detail
