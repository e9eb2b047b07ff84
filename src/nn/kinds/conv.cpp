// Conv and DWConv rows: [c2, k, s, p, g, d, act] (Ultralytics' Conv / DWConv arguments after c1).
#include "../layer_row.hpp"
#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn::detail {

LayerKind conv_kind() {
  LayerKind kind;
  kind.name = "Conv";
  kind.pt_classes = {"Conv"};
  kind.build = [](const LayerRow& row) {
    const int64_t c2 = row.channels();
    auto o = ConvOptions(row.c1(), c2, row.integer_in(1, 1, 1, 31), row.integer_in(2, 1, 1, 32))
                 .g(row.integer_in(4, 1, 1, 65536))
                 .d(row.integer_in(5, 1, 1, 32))
                 .act(row.boolean(6, true));
    if (row.has(3)) o.p(row.integer_in(3, 0, 0, 31));
    return LayerKind::Built{Conv(o).ptr(), c2};
  };
  kind.forward = forward_one<ConvImpl>();
  return kind;
}

// DWConv(c1, c2, k=1, s=1, d=1, act=True): groups gcd(c1, c2).
LayerKind dwconv_kind() {
  LayerKind kind;
  kind.name = "DWConv";
  kind.pt_classes = {"DWConv"};
  kind.build = [](const LayerRow& row) {
    const int64_t c2 = row.channels();
    const auto o = dwconv_options(row.c1(), c2, row.integer_in(1, 1, 1, 31), row.integer_in(2, 1, 1, 32),
                                  row.integer_in(3, 1, 1, 32), row.boolean(4, true));
    return LayerKind::Built{Conv(o).ptr(), c2};
  };
  kind.forward = forward_one<ConvImpl>();
  return kind;
}

}  // namespace yolotrain::nn::detail
