#pragma once
// What label files (scan.cpp) and a program's samples (memory_dataset.cpp) share: the rules a
// box must meet, and how a usable image is counted into its dataset.
#include <array>
#include <string>
#include <vector>

#include "yolotrain/data/dataset.hpp"

namespace yolotrain::data::detail {

/// Checks v = {class, x_center, y_center, width, height} (normalised) for `nc` classes: an error
/// text, or "" with `box` filled (clipped to [0, 1] when it overshoots by at most `tol`, then
/// `clipped` is set).
std::string check_box(const double v[5], int nc, float tol, Box& box, bool& clipped);

/// Checks a pose label row v = {class, cx, cy, w, h, then n keypoints of `dims` numbers} (n, dims =
/// kpt_shape) as Ultralytics' verify_image_label does: 5 + n * dims columns, the keypoints' x, y at
/// most 1.01, every number at least -0.01; then its box by check_box(). An error text, or "" with
/// `box` filled and `keypoints` holding n (x, y, visibility) triplets (2 dims: visibility 0 where
/// x or y is negative, else 1; 3 dims: as written).
std::string check_pose_row(const std::vector<double>& v, int nc, float tol, std::array<int, 2> kpt_shape, Box& box,
                           std::vector<float>& keypoints, bool& clipped);

/// Adds a usable image to `ds`: its record, and its counts in the report (images, backgrounds,
/// boxes, boxes per class; report.boxes_per_class already sized nc).
void add_usable(Dataset& ds, ImageRecord record);

}  // namespace yolotrain::data::detail
