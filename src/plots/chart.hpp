#pragma once

// Line charts drawn with OpenCV's primitives (axes, ticks, title, legend): the charts of the run
// without a plotting library (docs/plots.md says why). Private to the plots part.

#include <opencv2/core.hpp>

#include <string>
#include <vector>

namespace yolotrain::plots::detail {

/// matplotlib's first two default colours (tab:blue, tab:orange), as B, G, R.
inline const cv::Scalar kBlue(180, 119, 31), kOrange(14, 127, 255);

struct Series {
  std::vector<double> x, y;
  cv::Scalar color;
  std::string label;
  bool markers = false;  ///< a dot at every point
  bool dotted = false;   ///< a dotted line (else solid)
  int width = 1;         ///< extra line width (the "all classes" curve is thicker)
};

struct Panel {
  std::string title, xlabel, ylabel;
  std::vector<Series> series;
  bool legend = false;          ///< in the upper right of the plot
  bool legend_outside = false;  ///< right of the plot, its upper edge level with the plot's
  bool fixed_unit_range = false;  ///< x and y from 0 to 1 (curves of rates)
};

/// matplotlib's default colour cycle (tab10), as B, G, R.
cv::Scalar cycle_color(std::size_t i);

/// "Nice" tick values (steps of 1, 2, 2.5 or 5 x 10^k) covering [lo, hi], about `count` of them.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

/// Draws `panel` into `area` of `canvas`: a framed plot with ticks and their values, the title
/// above, axis labels, each series, and the legend in the upper right when asked.
void draw_panel(cv::Mat& canvas, const cv::Rect& area, const Panel& panel);

}  // namespace yolotrain::plots::detail
