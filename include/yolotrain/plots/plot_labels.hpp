#pragma once

#include <string>
#include <vector>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/image.hpp"

namespace yolotrain::plots {

/// Ultralytics' plot_labels (labels.jpg) of a training set's boxes (normalised centre and size):
/// 2 x 2 panels, 1600 x 1600 px (its 8 x 8 in at 200 dpi): the instances per class as bars in the
/// class palette (the names upright below when there are fewer than 30, else "classes"); the
/// first 500 boxes drawn centred on a white square, outlined in their class colour; and 50 x 50
/// histograms of the centres (x, y) and of the sizes (width, height), coloured from near white to
/// matplotlib's blue and saturating where the densest cells hold 10 % of the boxes (seaborn's
/// pmax 0.9). Empty cells stay white. Ultralytics' labels_correlogram.jpg is not drawn.
data::Image plot_labels(const std::vector<data::Box>& boxes, const std::vector<std::string>& names);

}  // namespace yolotrain::plots
