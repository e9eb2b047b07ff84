#include "arena_layout.hpp"

#include "catch.hpp"

#include <random>

using yolotrain::predict::detail::BufferLife;
using yolotrain::predict::detail::layout_arena;

namespace {

bool overlap_in_time(const BufferLife& a, const BufferLife& b) { return !(a.last < b.first || b.last < a.first); }

}  // namespace

TEST_CASE("Arena buffers alive at the same time never share bytes", "[predict][arena]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLife> buffers;
    for (int i = 0; i < 60; ++i) {
      const int first = static_cast<int>(rng() % 100);
      buffers.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 20)});
    }
    const auto layout = layout_arena(buffers);
    std::size_t sum = 0;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      sum += (buffers[i].bytes + 63) / 64 * 64;
      CHECK(layout.offsets[i] % 64 == 0);
      CHECK(layout.offsets[i] + buffers[i].bytes <= layout.bytes);
      for (std::size_t j = 0; j < i; ++j) {
        if (!overlap_in_time(buffers[i], buffers[j])) continue;
        const bool apart = layout.offsets[i] + buffers[i].bytes <= layout.offsets[j] ||
                           layout.offsets[j] + buffers[j].bytes <= layout.offsets[i];
        CHECK(apart);
      }
    }
    CHECK(layout.bytes < sum);  // lives this short leave room to share
  }
}

TEST_CASE("Arena: a chain of steps needs only two buffers at a time", "[predict][arena]") {
  // a -> b -> c -> d, each read by the next step only: a and c can share, b and d can share.
  const std::vector<BufferLife> chain{{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  const auto layout = layout_arena(chain);
  CHECK(layout.bytes == 2 * 1024);
  CHECK(layout.offsets[0] == layout.offsets[2]);
  CHECK(layout.offsets[1] == layout.offsets[3]);
  CHECK(layout.offsets[0] != layout.offsets[1]);
  CHECK(layout_arena({}).bytes == 0);
}
