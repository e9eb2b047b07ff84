#pragma once

// A mask's outline as Ultralytics draws and saves it (8.4.117 utils/ops.py masks2segments with
// strategy "all", data/converter.py merge_multi_segment and min_index).

#include <cstdint>
#include <vector>

namespace yolotrain::data {

/// Ultralytics' merge_multi_segment: several polygons (each x y pairs) joined into one by the
/// shortest links between neighbours (each next one entered and left at its points closest to
/// the previous and the next), the pieces concatenated as masks2segments does.
std::vector<float> merge_multi_segment(const std::vector<std::vector<float>>& segments);

/// Ultralytics' masks2segments for one 0/1 mask of `height` x `width` bytes (row-major): its outer
/// contours (OpenCV's findContours, RETR_EXTERNAL, CHAIN_APPROX_SIMPLE), merged by
/// merge_multi_segment when there are several; x y pairs in mask pixels, empty when the mask is.
std::vector<float> mask_to_segment(const std::uint8_t* mask, int height, int width);

}  // namespace yolotrain::data
