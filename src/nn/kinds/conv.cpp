// Conv and DWConv rows: [c2, k, s, p, g, d, act] and [c2, k, s, d, act] (Ultralytics' Conv and
// DWConv arguments after c1).
#include "../layer_row.hpp"
#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_conv(const LayerRow& row) {
  const int64_t c2 = row.channels();
  auto o = ConvOptions(row.c1(), c2, row.integer_in(1, 1, 1, 31), row.integer_in(2, 1, 1, 32))
               .g(row.integer_in(4, 1, 1, 65536))
               .d(row.integer_in(5, 1, 1, 32))
               .act(row.boolean(6, true));
  if (row.has(3)) o.p(row.integer_in(3, 0, 0, 31));
  return {Conv(o).ptr(), c2};
}

// DWConv(c1, c2, k=1, s=1, d=1, act=True): groups gcd(c1, c2).
LayerKind::Built build_dwconv(const LayerRow& row) {
  const int64_t c2 = row.channels();
  return {Conv(dwconv_options(row.c1(), c2, row.integer_in(1, 1, 1, 31), row.integer_in(2, 1, 1, 32),
                              row.integer_in(3, 1, 1, 32), row.boolean(4, true)))
              .ptr(),
          c2};
}

LayerKind conv_kind() { return {"Conv", kOneInput, {"Conv"}, build_conv, forward_one<ConvImpl>()}; }

LayerKind dwconv_kind() { return {"DWConv", kOneInput, {"DWConv"}, build_dwconv, forward_one<ConvImpl>()}; }

}  // namespace yolotrain::nn::detail
