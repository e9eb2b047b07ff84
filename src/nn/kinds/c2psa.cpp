// C2PSA rows [c2, e] (YOLO11's attention block; takes the repeat count; c2 must equal c1).
#include "../layer_row.hpp"
#include "yolotrain/nn/attention.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_c2psa(const LayerRow& row) {
  const int64_t c2 = row.channels();
  if (c2 != row.c1()) {
    throw row.error("its output channels (" + std::to_string(c2) + " once scaled) must equal its input's (" +
                    std::to_string(row.c1()) + ")");
  }
  const double e = row.real_in(1, 0.5, 0.01, 1);
  const auto hidden = static_cast<int64_t>(static_cast<double>(c2) * e);
  if (hidden < 64) {
    throw row.error("its hidden channels int(c2 * e) must be at least 64 (heads = channels / 64), got " +
                    std::to_string(hidden));
  }
  return {C2PSA(C2PSAOptions(row.c1(), c2).n(row.repeats()).e(e)).ptr(), c2};
}

LayerKind c2psa_kind() {
  return {"C2PSA", kRepeated, {"C2PSA", "PSABlock", "Attention"}, build_c2psa, forward_one<C2PSAImpl>()};
}

}  // namespace yolotrain::nn::detail
