#pragma once

// Line charts drawn with OpenCV's primitives (axes, ticks, title, legend): the charts of the run
// without a plotting library (docs/plots.md says why). Private to the plots part.

#include <opencv2/core.hpp>

#include <string>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::plots::detail {

/// matplotlib's first two default colours (tab:blue, tab:orange), as B, G, R.
inline const cv::Scalar kBlue(180, 119, 31), kOrange(14, 127, 255);
/// The charts' text colour (dark grey).
inline const cv::Scalar kText(40, 40, 40);

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

/// A tick's value written with as many decimals as the ticks' `step` needs (0.25 -> "0.75").
std::string tick_text(double v, double step);

/// A plot area of a canvas and the data ranges it shows.
struct Axes {
  cv::Rect plot;
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  /// The canvas point of data (x, y).
  cv::Point2d at(double x, double y) const;
};

/// The line thickness of a chart whose text scale is `scale`.
int line_thickness(double scale);

/// Ticks with their values left of and below `axes.plot` (none below without `xticks`), light
/// grid lines across it with `grid`, and its frame with `frame`; `scale` is the text scale.
void draw_ticks(cv::Mat& m, const Axes& axes, double scale, bool grid, bool frame, bool xticks = true);

/// Text in the charts' font and colour, its box placed so that `anchor` is at (align_x, align_y)
/// of it (0, 0 the upper left; 1, 1 the lower right).
void put_text(cv::Mat& m, const std::string& s, cv::Point anchor, double scale, int thickness, double align_x,
              double align_y, const cv::Scalar& color = kText);
/// put_text() turned a quarter left (reading upwards), drawn darkening what is under it.
void put_text_vertical(cv::Mat& m, const std::string& s, cv::Point anchor, double scale, int thickness, double align_x,
                       double align_y);

/// The BGR picture `m` (CV_8UC3) as the library's image (what every plot returns).
data::Image to_image(const cv::Mat& m);

/// Draws `panel` into `area` of `canvas`: a framed plot with ticks and their values, the title
/// above, axis labels, each series, and the legend in the upper right when asked.
void draw_panel(cv::Mat& canvas, const cv::Rect& area, const Panel& panel);

}  // namespace yolotrain::plots::detail
