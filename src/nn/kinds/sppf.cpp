// SPPF rows [c2, k].
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind sppf_kind() {
  LayerKind kind;
  kind.name = "SPPF";
  kind.pt_classes = {"SPPF"};
  kind.build = [](const LayerRow& row) {
    const int64_t c2 = row.channels();
    return LayerKind::Built{SPPF(SPPFOptions(row.c1(), c2).k(row.integer_in(1, 5, 1, 31))).ptr(), c2};
  };
  kind.forward = forward_one<SPPFImpl>();
  return kind;
}

}  // namespace yolotrain::nn::detail
