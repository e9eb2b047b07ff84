#pragma once

#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// scipy.ndimage.gaussian_filter1d(y, sigma) with its defaults (mode "reflect", truncate 4), as
/// Ultralytics smooths the curves of results.png.
std::vector<double> gaussian_filter1d(const std::vector<double>& y, double sigma);

/// Ultralytics' plot_results of a results.csv (the text): 2 x 5 panels — train box, cls and dfl
/// loss, precision, recall; val box, cls and dfl loss, mAP50, mAP50-95 — each the series against
/// the epoch (dots and a line, "results") and its gaussian smoothing (sigma 3, dotted, "smooth"),
/// the column name as title, 2400 x 1200 px as its 12 x 6 in figure at 200 dpi. Throws
/// yolotrain::Error for text without those columns.
data::Image plot_results(const std::string& results_csv);

}  // namespace yolotrain::plots
