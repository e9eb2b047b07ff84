#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"
#include "yolotrain/metrics/confusion_matrix.hpp"

namespace yolotrain::plots {

/// Ultralytics' ConfusionMatrix.plot (confusion_matrix.png, confusion_matrix_normalized.png): a
/// heatmap in matplotlib's "Blues" from 0 to the largest value, rows the predicted class and
/// columns the true one ("Predicted", "True"), the background last; `normalize` divides each
/// column by its sum. Values below 0.005 are left white and unwritten (as its NaN cells); with
/// fewer than 30 classes each cell carries its value (".2f" normalized, else a count). Tick labels
/// are the names plus "background" when there are fewer than 99 and as many as classes, else
/// numbers. A colour bar on the right. 3000 x 2250 px (its 12 x 9 in at 250 dpi).
data::Image plot_confusion_matrix(const metrics::ConfusionMatrix& matrix, const std::vector<std::string>& names,
                                  bool normalize);

/// Ultralytics' file names: confusion_matrix.png, or confusion_matrix_normalized.png.
std::string confusion_matrix_file(bool normalize);

/// A rectangle of pixels of a picture.
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

/// Where plot_confusion_matrix() draws the cell of (predicted, truth) for a matrix of `classes`
/// classes (the background included at index `classes`): for tests and for callers that mark it.
PixelRect confusion_cell(std::int64_t classes, std::int64_t predicted, std::int64_t truth);

/// matplotlib's "Blues" colormap at t in [0, 1] (B, G, R).
std::array<std::uint8_t, 3> blues(double t);

}  // namespace yolotrain::plots
