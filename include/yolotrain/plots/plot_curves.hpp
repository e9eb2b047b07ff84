#pragma once

#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"
#include "yolotrain/metrics/det_metrics.hpp"

namespace yolotrain::plots {

/// Ultralytics' plot_pr_curve (PR_curve.png): precision against recall per class (legend
/// "name 0.912": its AP50, when there are fewer than 21 classes) and their mean, thick blue,
/// "all classes 0.873 mAP@0.5". 2250 x 1500 px (its 9 x 6 in at 250 dpi). An empty chart when
/// the metrics have no curves (no true positive).
data::Image plot_pr_curve(const metrics::DetMetrics& m, const std::vector<std::string>& names);

/// What plot_mc_curve() draws against the confidence.
enum class Curve { F1, Precision, Recall };

/// Ultralytics' plot_mc_curve (F1_curve.png, P_curve.png, R_curve.png): the value against the
/// confidence per class and the smoothed mean (its smooth(), 0.05), "all classes 0.62 at 0.412"
/// (the mean's maximum and where).
data::Image plot_mc_curve(const metrics::DetMetrics& m, const std::vector<std::string>& names, Curve which);

/// The file names Ultralytics gives them: PR_curve.png, F1_curve.png, P_curve.png, R_curve.png.
std::string curve_file(Curve which);

}  // namespace yolotrain::plots
