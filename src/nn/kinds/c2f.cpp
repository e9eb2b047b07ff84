// C2f rows [c2, shortcut, g, e] (YOLOv8) and C3k2 rows [c2, c3k, e, g, shortcut] (YOLO11); both
// take the repeat count (Ultralytics inserts it as the third constructor argument).
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind c2f_kind() {
  LayerKind kind;
  kind.name = "C2f";
  kind.takes_repeats = true;
  kind.pt_classes = {"C2f", "Bottleneck"};
  kind.build = [](const LayerRow& row) {
    const int64_t c2 = row.channels();
    const auto o = C2fOptions(row.c1(), c2)
                       .n(row.repeats())
                       .shortcut(row.boolean(1, false))
                       .g(row.integer_in(2, 1, 1, 65536))
                       .e(row.real_in(3, 0.5, 0.01, 4));
    return LayerKind::Built{C2f(o).ptr(), c2};
  };
  kind.forward = forward_one<C2fImpl>();
  return kind;
}

// Ultralytics 8.3 parse_model: `if m is C3k2 and scale in "mlx": args[3] = True` (c3k forced on
// for the m, l and x scales; n and s keep the row's flag).
LayerKind c3k2_kind() {
  LayerKind kind;
  kind.name = "C3k2";
  kind.takes_repeats = true;
  kind.pt_classes = {"C3k2", "C3k", "Bottleneck"};
  kind.build = [](const LayerRow& row) {
    const int64_t c2 = row.channels();
    const std::string& scale = row.model().scale;
    const bool forced = scale == "m" || scale == "l" || scale == "x";
    const auto o = c3k2_options(row.c1(), c2, row.repeats(), forced || row.boolean(1, false),
                                row.real_in(2, 0.5, 0.01, 4), row.integer_in(3, 1, 1, 65536), row.boolean(4, true));
    return LayerKind::Built{C2f(o).ptr(), c2};
  };
  kind.forward = forward_one<C2fImpl>();
  return kind;
}

// Bottleneck rows [c2, shortcut, g, k (unused: 3x3, 3x3), e].
LayerKind bottleneck_kind() {
  LayerKind kind;
  kind.name = "Bottleneck";
  kind.pt_classes = {"Bottleneck"};
  kind.build = [](const LayerRow& row) {
    const int64_t c2 = row.channels();
    const auto o = BottleneckOptions(row.c1(), c2)
                       .shortcut(row.boolean(1, true))
                       .g(row.integer_in(2, 1, 1, 65536))
                       .e(row.real_in(4, 0.5, 0.01, 4));
    return LayerKind::Built{Bottleneck(o).ptr(), c2};
  };
  kind.forward = forward_one<BottleneckImpl>();
  return kind;
}

}  // namespace yolotrain::nn::detail
