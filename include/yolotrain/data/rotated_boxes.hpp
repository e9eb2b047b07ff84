#pragma once
// Oriented boxes from outlines, as Ultralytics 8.4.117 makes them for its OBB task (utils/ops.py
// xyxyxyxy2xywhr, called by data/augment.py Format with return_obb): the outline's minimum-area
// rectangle (OpenCV's minAreaRect), the longer side as the width, the angle in radians within
// [-pi/4, 3pi/4).
#include <array>
#include <vector>

namespace yolotrain::data {

/// The rotated box (centre x, centre y, width, height, angle in radians) of an outline given as x, y
/// pairs (an OBB label's 4 corners, or a polygon of any number of points): Ultralytics'
/// xyxyxyxy2xywhr of one row. The width is the longer side; a box given with w < h comes back with
/// w and h swapped and its angle shifted by pi/2 modulo pi. An empty outline gives zeros.
std::array<float, 5> outline_xywhr(const std::vector<float>& xy);

/// The 4 corners (x1 y1 .. x4 y4) of a rotated box (Ultralytics' xywhr2xyxyxyxy: centre + (w/2)
/// (cos, sin) + (h/2) (-sin, cos) in the order +w+h, +w-h, -w-h, -w+h).
std::array<float, 8> xywhr_corners(const std::array<float, 5>& box);

}  // namespace yolotrain::data
