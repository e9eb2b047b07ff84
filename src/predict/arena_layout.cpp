#include "arena_layout.hpp"

#include <algorithm>
#include <numeric>

namespace yolotrain::predict::detail {

ArenaLayout layout_arena(const std::vector<BufferLife>& buffers, std::size_t alignment) {
  const auto rounded = [alignment](std::size_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> placed;  // buffer indices, kept sorted by offset
  for (const std::size_t i : order) {
    const BufferLife& b = buffers[i];
    const std::size_t size = rounded(b.bytes);
    std::size_t offset = 0;
    for (const std::size_t j : placed) {
      const BufferLife& p = buffers[j];
      if (p.last < b.first || b.last < p.first) continue;  // never alive together
      if (offset + size <= layout.offsets[j]) break;        // fits in the gap below j
      offset = std::max(offset, layout.offsets[j] + rounded(p.bytes));
    }
    layout.offsets[i] = offset;
    layout.bytes = std::max(layout.bytes, offset + size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), offset,
                                   [&](std::size_t off, std::size_t j) { return off < layout.offsets[j]; }),
                  i);
  }
  return layout;
}

}  // namespace yolotrain::predict::detail
