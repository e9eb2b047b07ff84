// Ultralytics 8.4.117 utils/ops.py resample_segments and segment2box, with numpy's arithmetic
// (linspace, searchsorted + insert, interp) so that the points are the same floats.
#include "yolotrain/data/segments.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace yolotrain::data {
namespace {

// np.linspace(0, stop, num): i * step, the last exactly stop.
std::vector<double> linspace(double stop, int num) {
  std::vector<double> y(static_cast<size_t>(std::max(num, 0)));
  if (num == 1) y[0] = 0;
  if (num <= 1) return y;
  const double step = stop / (num - 1);
  for (int i = 0; i < num; ++i) y[i] = i * step;
  y.back() = stop;
  return y;
}

// np.interp(x, arange(m), fp) for x in [0, m - 1].
double interp(double x, const std::vector<double>& fp) {
  const size_t m = fp.size();
  if (x >= static_cast<double>(m - 1)) return fp[m - 1];
  if (x <= 0) return fp[0];
  const size_t j = static_cast<size_t>(std::floor(x));
  if (static_cast<double>(j) == x) return fp[j];
  const double slope = fp[j + 1] - fp[j];  // over dx = 1
  return slope * (x - static_cast<double>(j)) + fp[j];
}

}  // namespace

std::vector<float> resample_segment(const std::vector<float>& xy, int n) {
  const int points = static_cast<int>(xy.size() / 2);
  if (points == n || points == 0) return xy;
  const int m = points + 1;  // closed: the first point again
  std::vector<double> px, py;
  for (int i = 0; i < m; ++i) {
    px.push_back(xy[2 * (i % points)]);
    py.push_back(xy[2 * (i % points) + 1]);
  }
  std::vector<double> x = linspace(m - 1, m < n ? n - m : n);
  if (m < n) {  // np.insert(x, np.searchsorted(x, xp), xp): each vertex before the first x >= it
    std::vector<double> merged;
    merged.reserve(static_cast<size_t>(n));
    size_t k = 0;
    for (int v = 0; v < m; ++v) {
      while (k < x.size() && x[k] < v) merged.push_back(x[k++]);
      merged.push_back(v);
    }
    while (k < x.size()) merged.push_back(x[k++]);
    x = std::move(merged);
  }
  std::vector<float> out;
  out.reserve(2 * x.size());
  for (double t : x) {
    out.push_back(static_cast<float>(interp(t, px)));
    out.push_back(static_cast<float>(interp(t, py)));
  }
  return out;
}

std::array<double, 4> segment_box(const std::vector<double>& xy, double width, double height) {
  const size_t n = xy.size() / 2;
  if (n == 0) return {0, 0, 0, 0};
  double xmin = std::numeric_limits<double>::infinity(), ymin = xmin, xmax = -xmin, ymax = -xmin;
  for (size_t i = 0; i < n; ++i) {
    xmin = std::min(xmin, xy[2 * i]), xmax = std::max(xmax, xy[2 * i]);
    ymin = std::min(ymin, xy[2 * i + 1]), ymax = std::max(ymax, xy[2 * i + 1]);
  }
  if (xmin >= 0 && ymin >= 0 && xmax <= width && ymax <= height) return {xmin, ymin, xmax, ymax};
  double bx1 = std::numeric_limits<double>::infinity(), by1 = bx1, bx2 = -bx1, by2 = -bx1;
  bool any = false;
  auto take = [&](double x, double y) {
    bx1 = std::min(bx1, x), by1 = std::min(by1, y), bx2 = std::max(bx2, x), by2 = std::max(by2, y);
    any = true;
  };
  for (size_t i = 0; i < n; ++i) {
    const double x = xy[2 * i], y = xy[2 * i + 1];
    if (x >= 0 && y >= 0 && x <= width && y <= height) take(x, y);
  }
  // Each edge's crossings of x = 0, x = width, y = 0, y = height (axes 0 0 1 1), kept when inside
  // the edge (0 <= t <= 1) and the other coordinate within the border's length.
  const double bounds[4] = {0, width, 0, height}, lims[4] = {height, height, width, width};
  const int axes[4] = {0, 0, 1, 1};
  for (size_t i = 0; i < n; ++i) {
    const size_t j = (i + 1) % n;
    const double start[2] = {xy[2 * i], xy[2 * i + 1]};
    const double delta[2] = {xy[2 * j] - start[0], xy[2 * j + 1] - start[1]};
    for (int k = 0; k < 4; ++k) {
      const double t = (bounds[k] - start[axes[k]]) / delta[axes[k]];  // inf / nan for a parallel edge
      const double inter[2] = {start[0] + t * delta[0], start[1] + t * delta[1]};
      const double other = inter[1 - axes[k]];
      if (t >= 0 && t <= 1 && other >= 0 && other <= lims[k]) take(inter[0], inter[1]);
    }
  }
  std::vector<cv::Point2f> contour;
  for (size_t i = 0; i < n; ++i) contour.emplace_back(static_cast<float>(xy[2 * i]), static_cast<float>(xy[2 * i + 1]));
  for (const auto& [cx, cy] : {std::pair{0.0, 0.0}, {width, 0.0}, {0.0, height}, {width, height}}) {
    if (cv::pointPolygonTest(contour, cv::Point2f(static_cast<float>(cx), static_cast<float>(cy)), false) >= 0) {
      take(cx, cy);
    }
  }
  if (!any) return {0, 0, 0, 0};
  return {bx1, by1, bx2, by2};
}

}  // namespace yolotrain::data
