// Concat rows [dimension] over a list of inputs (channels only).
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind concat_kind() {
  LayerKind kind;
  kind.name = "Concat";
  kind.multi_input = true;
  kind.pt_classes = {"Concat"};
  kind.build = [](const LayerRow& row) {
    if (row.integer(0, 1) != 1) throw row.error("only channel concatenation (dimension 1) is supported");
    int64_t c2 = 0;
    for (int64_t c : row.in_channels()) c2 += c;
    return LayerKind::Built{Concat(1).ptr(), c2};
  };
  kind.forward = [](torch::nn::Module& m, const std::vector<at::Tensor>& in) { return m.as<ConcatImpl>()->forward(in); };
  return kind;
}

}  // namespace yolotrain::nn::detail
