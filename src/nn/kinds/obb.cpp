// OBB rows [nc, ne] (YOLOv8-obb, YOLO11-obb) and OBB26 rows (YOLO26-obb): Detect plus an angle per
// anchor (nn::DetectImpl with ne > 0, src/nn/obb_head.cpp), the boxes rotated by it.
#include "../layer_row.hpp"
#include "yolotrain/nn/detect.hpp"

namespace yolotrain::nn::detail {
namespace {

DetectOptions obb_options(const LayerRow& row) { return detect_options(row).ne(row.integer_in(1, 1, 1, 16)); }

LayerKind::Built build_obb(const LayerRow& row) { return {Detect(obb_options(row)).ptr(), 0}; }

LayerKind::Built build_obb26(const LayerRow& row) { return {Detect(obb_options(row).obb26(true)).ptr(), 0}; }

}  // namespace

// Heads, run by DetectionModel itself, as Detect is.
LayerKind obb_kind() { return {"OBB", kHead, {"OBB", "DFL", "DWConv", "Conv"}, build_obb, nullptr}; }

LayerKind obb26_kind() { return {"OBB26", kHead, {"OBB26", "OBB", "DFL", "DWConv", "Conv"}, build_obb26, nullptr}; }

}  // namespace yolotrain::nn::detail
