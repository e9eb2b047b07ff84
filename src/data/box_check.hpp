#pragma once
// The rules a label box must meet, shared by label files (scan.cpp) and a program's samples
// (memory_dataset.cpp).
#include <string>

#include "yolotrain/data/dataset.hpp"

namespace yolotrain::data::detail {

/// Checks v = {class, x_center, y_center, width, height} (normalised) for `nc` classes: an error
/// text, or "" with `box` filled (clipped to [0, 1] when it overshoots by at most `tol`, then
/// `clipped` is set).
std::string check_box(const double v[5], int nc, float tol, Box& box, bool& clipped);

}  // namespace yolotrain::data::detail
