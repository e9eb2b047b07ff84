#include "chart.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

namespace yolotrain::plots::detail {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
const cv::Scalar kFrame(60, 60, 60), kGrid(225, 225, 225);

// A dotted polyline: short dashes every few pixels along the path.
void dotted_line(cv::Mat& m, const std::vector<cv::Point2d>& pts, const cv::Scalar& color, int thickness) {
  const double dash = 4.0 * thickness, gap = 3.0 * thickness;
  double phase = 0;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    const cv::Point2d a = pts[i - 1], d = pts[i] - pts[i - 1];
    const double len = std::hypot(d.x, d.y);
    double s = 0;
    while (s < len) {
      const double in_cycle = std::fmod(phase + s, dash + gap);
      const double run =
          in_cycle < dash ? std::min(dash - in_cycle, len - s) : std::min(dash + gap - in_cycle, len - s);
      if (in_cycle < dash) {
        const cv::Point2d p = a + d * (s / len), q = a + d * ((s + run) / len);
        cv::line(m, cv::Point(cvRound(p.x), cvRound(p.y)), cv::Point(cvRound(q.x), cvRound(q.y)), color, thickness,
                 cv::LINE_AA);
      }
      s += std::max(run, 1e-3);
    }
    phase += len;
  }
}

std::pair<double, double> padded_range(double lo, double hi) {
  // A flat series (smoothing leaves float noise in it) gets a range around its value.
  if (!(hi - lo > 1e-9 * std::max({1.0, std::abs(lo), std::abs(hi)}))) {
    const double pad = std::abs(lo) > 0 ? std::abs(lo) * 0.05 : 0.5;
    return {lo - pad, hi + pad};
  }
  const double pad = (hi - lo) * 0.05;  // matplotlib's default margins
  return {lo - pad, hi + pad};
}

}  // namespace

std::string tick_text(double v, double step) {
  char buf[32];
  int decimals = 0;  // as many as the step needs (0.0025 -> 4)
  while (decimals < 8 &&
         std::abs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6) {
    ++decimals;
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < step * 1e-6 ? 0.0 : v);
  return buf;
}

void put_text(cv::Mat& m, const std::string& s, cv::Point anchor, double scale, int thickness, double align_x,
              double align_y, const cv::Scalar& color) {
  int base = 0;
  const cv::Size t = cv::getTextSize(s, kFont, scale, thickness, &base);
  const cv::Point at(anchor.x - static_cast<int>(align_x * t.width),
                     anchor.y + static_cast<int>((1 - align_y) * t.height));
  cv::putText(m, s, at, kFont, scale, color, thickness, cv::LINE_AA);
}

void put_text_vertical(cv::Mat& m, const std::string& s, cv::Point anchor, double scale, int thickness, double align_x,
                       double align_y) {
  int base = 0;
  const cv::Size t = cv::getTextSize(s, kFont, scale, thickness, &base);
  cv::Mat strip(t.height + base + 2, t.width + 2, CV_8UC3, cv::Scalar(255, 255, 255));
  cv::putText(strip, s, cv::Point(1, t.height + 1), kFont, scale, kText, thickness, cv::LINE_AA);
  cv::rotate(strip, strip, cv::ROTATE_90_COUNTERCLOCKWISE);  // reads upwards
  const cv::Rect at(anchor.x - static_cast<int>(align_x * strip.cols),
                    anchor.y - static_cast<int>(align_y * strip.rows), strip.cols, strip.rows);
  const cv::Rect inside = at & cv::Rect(0, 0, m.cols, m.rows);
  if (inside.empty()) return;
  cv::Mat dst = m(inside);
  cv::min(dst, strip(cv::Rect(inside.x - at.x, inside.y - at.y, inside.width, inside.height)), dst);  // dark text over
}

data::Image to_image(const cv::Mat& m) {
  CV_Assert(m.type() == CV_8UC3);
  data::Image out(m.rows, m.cols);
  m.copyTo(cv::Mat(m.rows, m.cols, CV_8UC3, out.pixels.data()));
  return out;
}

cv::Scalar cycle_color(std::size_t i) {
  static const int rgb[10][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},   {148, 103, 189},
                                 {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  const int* c = rgb[i % 10];
  return cv::Scalar(c[2], c[1], c[0]);
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = f * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::ceil(lo / step - 1e-9);
  for (int i = 0; i <= 4 * count + 4; ++i) {  // indexed: a step below the values' precision cannot loop forever
    const double v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    ticks.push_back(v);
  }
  return ticks;
}

cv::Point2d Axes::at(double x, double y) const {
  return cv::Point2d(plot.x + (x - xmin) / (xmax - xmin) * plot.width,
                     plot.y + plot.height - (y - ymin) / (ymax - ymin) * plot.height);
}

int line_thickness(double scale) { return std::max(1, static_cast<int>(std::round(scale * 1.5))); }

void draw_ticks(cv::Mat& m, const Axes& axes, double s, bool grid, bool frame, bool xticks) {
  const int th = line_thickness(s);
  const cv::Rect& plot = axes.plot;
  const auto xt = nice_ticks(axes.xmin, axes.xmax, 5), yt = nice_ticks(axes.ymin, axes.ymax, 5);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1, ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double v : yt) {
    const int y = cvRound(axes.at(axes.xmin, v).y);
    if (grid) cv::line(m, {plot.x, y}, {plot.x + plot.width, y}, kGrid, 1);
    cv::line(m, {plot.x - 6, y}, {plot.x, y}, kFrame, th);
    put_text(m, tick_text(v, ystep), {plot.x - 10, y}, 0.5 * s, th, 1.0, 0.5);
  }
  for (double v : xt) {
    if (!xticks) break;
    const int x = cvRound(axes.at(v, axes.ymin).x);
    cv::line(m, {x, plot.y + plot.height}, {x, plot.y + plot.height + 6}, kFrame, th);
    put_text(m, tick_text(v, xstep), {x, plot.y + plot.height + 12}, 0.5 * s, th, 0.5, 0.0);
  }
  if (frame) cv::rectangle(m, plot, kFrame, th);
}

void draw_panel(cv::Mat& canvas, const cv::Rect& area, const Panel& panel) {
  cv::Mat m = canvas(area);
  const double s = std::min(area.width, area.height) / 600.0 + 0.3;  // text scale for the panel's size
  const int th = line_thickness(s);
  const int left = static_cast<int>(area.width * (panel.legend_outside ? 0.08 : 0.18));
  const int right = static_cast<int>(area.width * (panel.legend_outside ? 0.38 : 0.05));
  const int top = static_cast<int>(area.height * 0.12), bottom = static_cast<int>(area.height * 0.14);
  const cv::Rect plot(left, top, area.width - left - right, area.height - top - bottom);

  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  for (const auto& se : panel.series) {
    for (double v : se.x) xmin = std::min(xmin, v), xmax = std::max(xmax, v);
    for (double v : se.y) {
      if (std::isfinite(v)) ymin = std::min(ymin, v), ymax = std::max(ymax, v);
    }
  }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1;
  if (!std::isfinite(ymin)) ymin = 0, ymax = 1;
  std::tie(xmin, xmax) = padded_range(xmin, xmax);
  std::tie(ymin, ymax) = padded_range(ymin, ymax);
  if (panel.fixed_unit_range) xmin = ymin = 0, xmax = ymax = 1;
  const Axes axes{plot, xmin, xmax, ymin, ymax};
  const auto px = [&](double x, double y) { return axes.at(x, y); };
  draw_ticks(m, axes, s, true, false);  // the frame goes over the series, below
  for (const auto& se : panel.series) {
    std::vector<cv::Point2d> pts;
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if (std::isfinite(se.y[i])) pts.push_back(px(se.x[i], se.y[i]));
    }
    if (se.dotted) {
      dotted_line(m, pts, se.color, th + se.width);
    } else {
      std::vector<cv::Point> line;
      for (const auto& p : pts) line.emplace_back(cvRound(p.x), cvRound(p.y));
      cv::polylines(m, line, false, se.color, th + se.width, cv::LINE_AA);
    }
    if (se.markers) {
      for (const auto& p : pts) cv::circle(m, cv::Point(cvRound(p.x), cvRound(p.y)), th + 3, se.color, -1, cv::LINE_AA);
    }
  }
  cv::rectangle(m, plot, kFrame, th);
  put_text(m, panel.title, {area.width / 2, top / 2}, 0.65 * s, th + 1, 0.5, 0.5);
  const int gap = static_cast<int>(45 * s);  // the axis labels sit clear of the tick values
  if (!panel.xlabel.empty()) {
    put_text(m, panel.xlabel, {plot.x + plot.width / 2, plot.y + plot.height + gap * 3 / 2}, 0.55 * s, th, 0.5, 1.0);
  }
  if (!panel.ylabel.empty()) put_text(m, panel.ylabel, {4, plot.y - gap / 2}, 0.55 * s, th, 0.0, 1.0);
  if (panel.legend || panel.legend_outside) {
    std::vector<const Series*> rows;  // the labelled series
    for (const auto& se : panel.series) {
      if (!se.label.empty()) rows.push_back(&se);
    }
    if (rows.empty()) return;
    int base = 0, text_w = 0;
    for (const Series* se : rows)
      text_w = std::max(text_w, cv::getTextSize(se->label, kFont, 0.5 * s, th, &base).width);
    const int row = static_cast<int>(28 * s), sample = static_cast<int>(40 * s);
    const int box_x = panel.legend_outside ? plot.x + plot.width + 15 : plot.x + plot.width - text_w - sample - 30;
    const cv::Rect box(box_x, panel.legend_outside ? plot.y : plot.y + 10, text_w + sample + 20,
                       row * static_cast<int>(rows.size()) + 10);
    cv::rectangle(m, box, cv::Scalar(255, 255, 255), -1);
    cv::rectangle(m, box, kGrid, 1);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Series& se = *rows[i];
      const int y = box.y + 5 + row * static_cast<int>(i) + row / 2;
      const std::vector<cv::Point2d> line{{box.x + 8.0, double(y)}, {box.x + 8.0 + sample, double(y)}};
      if (se.dotted) dotted_line(m, line, se.color, th + se.width);
      else cv::line(m, {box.x + 8, y}, {box.x + 8 + sample, y}, se.color, th + se.width, cv::LINE_AA);
      if (se.markers) cv::circle(m, {box.x + 8 + sample / 2, y}, th + 3, se.color, -1, cv::LINE_AA);
      put_text(m, se.label, {box.x + 14 + sample, y}, 0.5 * s, th, 0.0, 0.5);
    }
  }
}

}  // namespace yolotrain::plots::detail
