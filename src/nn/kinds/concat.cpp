// Concat rows [dimension] over a list of inputs (channels only).
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_concat(const LayerRow& row) {
  if (row.integer(0, 1) != 1) throw row.error("only channel concatenation (dimension 1) is supported");
  int64_t c2 = 0;
  for (int64_t c : row.in_channels()) c2 += c;
  return {Concat(1).ptr(), c2};
}

at::Tensor forward_concat(torch::nn::Module& m, const std::vector<at::Tensor>& in) {
  return m.as<ConcatImpl>()->forward(in);
}

LayerKind concat_kind() { return {"Concat", kManyInputs, {"Concat"}, build_concat, forward_concat}; }

}  // namespace yolotrain::nn::detail
