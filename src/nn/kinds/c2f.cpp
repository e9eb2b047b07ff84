// C2f rows [c2, shortcut, g, e] (YOLOv8), C3k2 rows [c2, c3k, e, g, shortcut] (YOLO11), both
// taking the repeat count (Ultralytics inserts it as the third constructor argument), and
// Bottleneck rows [c2, shortcut, g, k (unused: 3x3, 3x3), e].
#include "../layer_row.hpp"
#include "yolotrain/nn/block.hpp"

namespace yolotrain::nn::detail {

LayerKind::Built build_c2f(const LayerRow& row) {
  const int64_t c2 = row.channels();
  return {C2f(C2fOptions(row.c1(), c2)
                  .n(row.repeats())
                  .shortcut(row.boolean(1, false))
                  .g(row.integer_in(2, 1, 1, 65536))
                  .e(row.real_in(3, 0.5, 0.01, 4)))
              .ptr(),
          c2};
}

// Ultralytics 8.3 parse_model: `if m is C3k2 and scale in "mlx": args[3] = True` (c3k forced on
// for the m, l and x scales; n and s keep the row's flag). 8.4's C3k2 takes attn before g and
// shortcut: rows [c2, c3k, e, attn, g, shortcut]; 8.3's [c2, c3k, e, g, shortcut].
LayerKind::Built build_c3k2(const LayerRow& row) {
  const int64_t c2 = row.channels();
  const std::string& scale = row.model().scale;
  const bool forced = scale == "m" || scale == "l" || scale == "x";
  const size_t g_at = row.model().ultralytics84 ? 4 : 3;
  const bool attn = row.model().ultralytics84 && row.boolean(3, false);
  return {C2f(c3k2_options(row.c1(), c2, row.repeats(), forced || row.boolean(1, false), row.real_in(2, 0.5, 0.01, 4),
                           row.integer_in(g_at, 1, 1, 65536), row.boolean(g_at + 1, true), attn))
              .ptr(),
          c2};
}

LayerKind::Built build_bottleneck(const LayerRow& row) {
  const int64_t c2 = row.channels();
  return {Bottleneck(BottleneckOptions(row.c1(), c2)
                         .shortcut(row.boolean(1, true))
                         .g(row.integer_in(2, 1, 1, 65536))
                         .e(row.real_in(4, 0.5, 0.01, 4)))
              .ptr(),
          c2};
}

LayerKind c2f_kind() { return {"C2f", kRepeated, {"C2f", "Bottleneck"}, build_c2f, forward_one<C2fImpl>()}; }

LayerKind c3k2_kind() {
  return {"C3k2", kRepeated, {"C3k2", "C3k", "Bottleneck", "PSABlock", "Attention"}, build_c3k2,
          forward_one<C2fImpl>()};
}

LayerKind bottleneck_kind() {
  return {"Bottleneck", kOneInput, {"Bottleneck"}, build_bottleneck, forward_one<BottleneckImpl>()};
}

}  // namespace yolotrain::nn::detail
