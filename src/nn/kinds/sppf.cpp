// SPPF rows [c2, k].
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_sppf(const LayerRow& row) {
  const int64_t c2 = row.channels();
  return {SPPF(SPPFOptions(row.c1(), c2).k(row.integer_in(1, 5, 1, 31))).ptr(), c2};
}

LayerKind sppf_kind() { return {"SPPF", kOneInput, {"SPPF"}, build_sppf, forward_one<SPPFImpl>()}; }

}  // namespace yolotrain::nn::detail
