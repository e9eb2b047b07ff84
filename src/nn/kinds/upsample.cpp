// nn.Upsample rows [None, scale_factor, "nearest"].
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind upsample_kind() {
  LayerKind kind;
  kind.name = "Upsample";
  kind.build = [](const LayerRow& row) {
    if (row.text(2, "nearest") != "nearest") throw row.error("only mode \"nearest\" is supported");
    if (row.has(0)) throw row.error("an output size is not supported; give [None, factor, \"nearest\"]");
    return LayerKind::Built{Upsample(row.real_in(1, 2.0, 1, 8)).ptr(), row.c1()};
  };
  kind.forward = forward_one<UpsampleImpl>();
  return kind;
}

}  // namespace yolotrain::nn::detail
