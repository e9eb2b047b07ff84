#pragma once

#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// scipy.ndimage.gaussian_filter1d(y, sigma) with its defaults (mode "reflect", truncate 4), as
/// Ultralytics smooths the curves of results.png.
std::vector<double> gaussian_filter1d(const std::vector<double>& y, double sigma);

/// The cells of one results.csv line, the padding around each removed (spaces, tabs, a CR): how
/// plot_results() reads a line, the current layout or the older one padded to 23 characters.
std::vector<std::string> results_csv_cells(const std::string& line);

/// Ultralytics 8.4's plot_results of a results.csv (the text): two rows of panels — the first half
/// of the "loss" columns and of the "metric" columns, then the second halves (detection: train box,
/// cls and dfl loss, precision, recall; val box, cls and dfl loss, mAP50, mAP50-95; segmentation
/// adds seg_loss, sem_loss and the mask metrics: 2 x 9) — each the series against the epoch (dots
/// and a line, "results") and its gaussian smoothing (sigma 3, dotted, "smooth"), the column name
/// as title, its (n + 2) x 6 in figure at 200 dpi (detection 2400 x 1200 px). Throws
/// yolotrain::Error for text without an epoch column or without loss and metric columns.
data::Image plot_results(const std::string& results_csv);

}  // namespace yolotrain::plots
