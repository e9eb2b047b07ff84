#pragma once
// What label files (scan.cpp) and a program's samples (memory_dataset.cpp) share: the rules a
// box must meet, and how a usable image is counted into its dataset.
#include <string>

#include "yolotrain/data/dataset.hpp"

namespace yolotrain::data::detail {

/// Checks v = {class, x_center, y_center, width, height} (normalised) for `nc` classes: an error
/// text, or "" with `box` filled (clipped to [0, 1] when it overshoots by at most `tol`, then
/// `clipped` is set).
std::string check_box(const double v[5], int nc, float tol, Box& box, bool& clipped);

/// Adds a usable image to `ds`: its record, and its counts in the report (images, backgrounds,
/// boxes, boxes per class; report.boxes_per_class already sized nc).
void add_usable(Dataset& ds, ImageRecord record);

}  // namespace yolotrain::data::detail
