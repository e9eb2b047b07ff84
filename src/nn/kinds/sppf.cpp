// SPPF rows [c2, k, n, shortcut] (8.4; 8.3 read [c2, k]). cv1 has its SiLU only as Ultralytics
// up to 8.3 built it (8.4.0 removed it, commit f2d3aed6).
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_sppf(const LayerRow& row) {
  const int64_t c2 = row.channels();
  return {SPPF(SPPFOptions(row.c1(), c2)
                   .k(row.integer_in(1, 5, 1, 31))
                   .n(row.integer_in(2, 3, 1, 16))
                   .shortcut(row.boolean(3, false))
                   .cv1_act(!row.model().ultralytics84))
              .ptr(),
          c2};
}

LayerKind sppf_kind() { return {"SPPF", kOneInput, {"SPPF"}, build_sppf, forward_one<SPPFImpl>()}; }

}  // namespace yolotrain::nn::detail
