#pragma once
// Offsets for buffers in one arena such that buffers alive at the same time never overlap: the
// oneDNN forward's activations (a plan's steps run in order, so a buffer is alive from the step
// that writes it first to the step that reads it last).
#include <cstddef>
#include <vector>

namespace yolotrain::predict::detail {

struct BufferLife {
  std::size_t bytes = 0;
  int first = 0;  ///< first step that uses the buffer
  int last = 0;   ///< last step that uses it (inclusive)
};

struct ArenaLayout {
  std::vector<std::size_t> offsets;  ///< one per buffer, multiples of `alignment`
  std::size_t bytes = 0;             ///< the arena's size
};

/// Greedy by size (largest first, each at the lowest offset where it fits beside the buffers
/// already placed whose lives overlap its own), as TensorFlow Lite's memory planner does.
ArenaLayout layout_arena(const std::vector<BufferLife>& buffers, std::size_t alignment = 64);

}  // namespace yolotrain::predict::detail
