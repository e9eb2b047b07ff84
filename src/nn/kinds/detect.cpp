// Detect rows [nc] over the feature levels; the last row. Ultralytics 8.3 parse_model sets
// `legacy = False` (YOLO11's depthwise class branch) when the model has a C3k2.
#include "../layer_row.hpp"
#include "yolotrain/nn/detect.hpp"

namespace yolotrain::nn::detail {

LayerKind detect_kind() {
  LayerKind kind;
  kind.name = "Detect";
  kind.multi_input = true;
  kind.head = true;
  kind.pt_classes = {"Detect", "DFL", "DWConv", "Conv"};
  kind.build = [](const LayerRow& row) {
    const auto o = DetectOptions(row.integer_in(0, row.model().nc, 1, 100000), row.in_channels())
                       .legacy(!row.model_has("C3k2"));
    return LayerKind::Built{Detect(o).ptr(), 0};
  };
  return kind;
}

}  // namespace yolotrain::nn::detail
