#pragma once

// Polygon outlines as the augmentations carry them (Ultralytics 8.4.117 utils/ops.py
// resample_segments and segment2box; augment.py RandomPerspective.apply_segments).

#include <array>
#include <vector>

namespace yolotrain::data {

/// Ultralytics' resample_segments for one polygon (x y pairs): closed by its first point, then `n`
/// points by np.interp at np.linspace positions with the original vertices inserted
/// (np.searchsorted / np.insert), float32 as Ultralytics stores them. A polygon of n points
/// already is returned as it is. Ultralytics resamples every training polygon to 1000 points.
std::vector<float> resample_segment(const std::vector<float>& xy, int n = 1000);

/// Ultralytics 8.4's segment2box: the box (x1, y1, x2, y2) of the polygon's part inside the
/// width x height image — its vertices inside, its edges' crossings of the borders, and the image
/// corners it contains; zeros when nothing is inside.
std::array<double, 4> segment_box(const std::vector<double>& xy, double width, double height);

}  // namespace yolotrain::data
