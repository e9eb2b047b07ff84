// Segment rows [nc, nm, npr] (YOLOv8-seg, YOLO11-seg) and Segment26 rows (YOLO26-seg): Detect
// plus the mask prototypes and coefficients (nn::DetectImpl with nm > 0). Ultralytics' parse_model
// scales npr as a channel count: make_divisible(min(npr, max_channels) * width, 8); nm stays.
#include <algorithm>

#include "../layer_row.hpp"
#include "yolotrain/nn/detect.hpp"
#include "yolotrain/nn/model_yaml.hpp"

namespace yolotrain::nn::detail {
namespace {

DetectOptions segment_options(const LayerRow& row) {
  const ModelDef& def = row.model();
  const double npr = static_cast<double>(row.integer_in(2, 256, 1, 100000));
  return detect_options(row)
      .nm(row.integer_in(1, 32, 1, 1024))
      .npr(make_divisible(std::min(npr, def.max_channels) * def.width, 8));
}

LayerKind::Built build_segment(const LayerRow& row) { return {Detect(segment_options(row)).ptr(), 0}; }

LayerKind::Built build_segment26(const LayerRow& row) {
  return {Detect(segment_options(row).proto26(true)).ptr(), 0};
}

}  // namespace

// Heads, run by DetectionModel itself, as Detect is.
LayerKind segment_kind() {
  return {"Segment", kHead, {"Segment", "Proto", "DFL", "DWConv", "Conv"}, build_segment, nullptr};
}

LayerKind segment26_kind() {
  return {"Segment26", kHead, {"Segment26", "Proto26", "DFL", "DWConv", "Conv"}, build_segment26, nullptr};
}

}  // namespace yolotrain::nn::detail
