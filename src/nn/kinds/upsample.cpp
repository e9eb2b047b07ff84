// nn.Upsample rows [None, scale_factor, "nearest"].
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_upsample(const LayerRow& row) {
  if (row.text(2, "nearest") != "nearest") throw row.error("only mode \"nearest\" is supported");
  if (row.has(0)) throw row.error("an output size is not supported; give [None, factor, \"nearest\"]");
  return {Upsample(row.real_in(1, 2.0, 1, 8)).ptr(), row.c1()};
}

LayerKind upsample_kind() { return {"Upsample", kOneInput, {}, build_upsample, forward_one<UpsampleImpl>()}; }

}  // namespace yolotrain::nn::detail
