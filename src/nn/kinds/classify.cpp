// Classify rows [nc, k, s, p, g] (YOLOv8-cls, YOLO11-cls, YOLO26-cls): Ultralytics' Classify head,
// whose output channels are the classes, never scaled by width (parse_model: "Classify() output must
// stay at nc"). Run by DetectionModel itself, as the detection heads are.
#include "../layer_row.hpp"
#include "yolotrain/nn/classify.hpp"

namespace yolotrain::nn::detail {
namespace {

LayerKind::Built build_classify(const LayerRow& row) {
  int64_t c1 = 0;
  for (int64_t c : row.in_channels()) c1 += c;  // a list of inputs is concatenated, as Ultralytics' forward does
  auto o = ClassifyOptions(c1, row.integer_in(0, row.model().nc, 1, 1 << 20))
               .k(row.integer_in(1, 1, 1, 31))
               .s(row.integer_in(2, 1, 1, 32))
               .g(row.integer_in(4, 1, 1, 65536));
  if (row.has(3)) o.p(row.integer_in(3, 0, 0, 31));
  return {Classify(o).ptr(), o.c2()};
}

}  // namespace

LayerKind classify_kind() { return {"Classify", kHead, {"Classify", "Conv"}, build_classify, nullptr}; }

}  // namespace yolotrain::nn::detail
