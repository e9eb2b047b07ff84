#include "yolotrain/plots/plot_confusion.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chart.hpp"

namespace yolotrain::plots {
namespace {

constexpr int kWidth = 3000, kHeight = 2250;
constexpr int kLeft = 640, kTop = 180, kSide = 1800;  // the heatmap's square
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

cv::Scalar blues_scalar(double t) {
  const auto c = blues(t);
  return cv::Scalar(c[0], c[1], c[2]);
}

cv::Rect cell_rect(std::int64_t classes, std::int64_t predicted, std::int64_t truth) {
  const PixelRect r = confusion_cell(classes, predicted, truth);
  return cv::Rect(r.x, r.y, r.width, r.height);
}

// seaborn's annotation colour: dark grey on light cells, white on dark ones (relative luminance).
cv::Scalar text_color(const cv::Scalar& bgr) {
  const auto linear = [](double c) {
    c /= 255.0;
    return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
  };
  const double lum = 0.2126 * linear(bgr[2]) + 0.7152 * linear(bgr[1]) + 0.0722 * linear(bgr[0]);
  return lum > 0.408 ? cv::Scalar(38, 38, 38) : cv::Scalar(255, 255, 255);
}

// The largest font scale at most `scale` whose text fits `width` x `height`.
double fitting_scale(const std::string& s, double scale, int thickness, double width, double height) {
  int base = 0;
  const cv::Size t = cv::getTextSize(s, kFont, scale, thickness, &base);
  return std::min({scale, scale * width / std::max(1, t.width), scale * height / std::max(1, t.height + base)});
}

std::string cell_text(double v, bool normalize) {
  char buf[32];
  std::snprintf(buf, sizeof buf, normalize ? "%.2f" : "%.0f", v);
  return buf;
}

// The class names left of the rows and below the columns; returns the height the column names take.
int draw_tick_labels(cv::Mat& m, const std::vector<std::string>& labels, int n) {
  const double cell = double(kSide) / n;
  double scale = 1.4;  // one size for every label: the largest that fits the longest
  for (const auto& l : labels) scale = std::min(scale, fitting_scale(l, 1.4, 2, kLeft - 240, cell * 0.9));
  int base = 0, widest = 0, tallest = 0;
  for (const auto& l : labels) {
    const cv::Size t = cv::getTextSize(l, kFont, scale, 2, &base);
    widest = std::max(widest, t.width), tallest = std::max(tallest, t.height + base);
  }
  const bool vertical = widest > cell * 0.95;  // x labels turn upright when they would overlap (as seaborn)
  for (int i = 0; i < n; ++i) {
    const int centre = static_cast<int>(kTop + (i + 0.5) * cell), x_centre = static_cast<int>(kLeft + (i + 0.5) * cell);
    detail::put_text(m, labels[i], {kLeft - 12, centre}, scale, 2, 1.0, 0.5);
    if (vertical) detail::put_text_vertical(m, labels[i], {x_centre, kTop + kSide + 12}, scale, 2, 0.5, 0.0);
    else detail::put_text(m, labels[i], {x_centre, kTop + kSide + 12}, scale, 2, 0.5, 0.0);
  }
  return 12 + (vertical ? widest : tallest);
}

void draw_color_bar(cv::Mat& m, double vmax) {
  const cv::Rect bar(kLeft + kSide + 70, kTop, 70, kSide);
  for (int y = 0; y < bar.height; ++y) {
    const cv::Scalar c = blues_scalar(1.0 - double(y) / (bar.height - 1));
    cv::line(m, {bar.x, bar.y + y}, {bar.x + bar.width - 1, bar.y + y}, c, 1);
  }
  const std::vector<double> ticks = detail::nice_ticks(0, vmax, 6);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (double v : ticks) {
    const int y = static_cast<int>(std::lround(bar.y + bar.height - 1 - v / vmax * (bar.height - 1)));
    cv::line(m, {bar.x + bar.width, y}, {bar.x + bar.width + 10, y}, cv::Scalar(60, 60, 60), 2);
    detail::put_text(m, detail::tick_text(v, step), {bar.x + bar.width + 18, y}, 1.2, 2, 0.0, 0.5);
  }
}

}  // namespace

std::array<std::uint8_t, 3> blues(double t) {
  static const int rgb[9][3] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
  const double x = std::clamp(t, 0.0, 1.0) * 8;
  const int i = std::min(7, static_cast<int>(x));
  const double f = x - i;
  const auto mix = [&](int c) {
    return static_cast<std::uint8_t>(std::lround(rgb[i][c] * (1 - f) + rgb[i + 1][c] * f));
  };
  return {mix(2), mix(1), mix(0)};
}

std::string confusion_matrix_file(bool normalize) {
  return normalize ? "confusion_matrix_normalized.png" : "confusion_matrix.png";
}

PixelRect confusion_cell(std::int64_t classes, std::int64_t predicted, std::int64_t truth) {
  const double cell = double(kSide) / double(classes + 1);
  const int x0 = static_cast<int>(std::lround(kLeft + truth * cell)),
            x1 = static_cast<int>(std::lround(kLeft + (truth + 1) * cell));
  const int y0 = static_cast<int>(std::lround(kTop + predicted * cell)),
            y1 = static_cast<int>(std::lround(kTop + (predicted + 1) * cell));
  return {x0, y0, x1 - x0, y1 - y0};
}

data::Image plot_confusion_matrix(const metrics::ConfusionMatrix& matrix, const std::vector<std::string>& names,
                                  bool normalize) {
  const std::int64_t nc = matrix.nc(), n = matrix.size();  // a classification matrix has no background
  std::vector<double> values(static_cast<std::size_t>(n * n));
  double vmax = 0;
  for (std::int64_t t = 0; t < n; ++t) {
    double column = 0;
    for (std::int64_t p = 0; p < n; ++p) column += matrix.at(p, t);
    for (std::int64_t p = 0; p < n; ++p) {
      const double v = matrix.at(p, t) / (normalize ? column + 1e-9 : 1.0);
      values[static_cast<std::size_t>(p * n + t)] = v;
      if (v >= 0.005) vmax = std::max(vmax, v);
    }
  }
  if (vmax <= 0) vmax = 1;  // nothing to show: an all-white heatmap with a 0..1 bar

  cv::Mat m(kHeight, kWidth, CV_8UC3, cv::Scalar(255, 255, 255));
  const bool annotate = nc < 30;
  const double cell = double(kSide) / double(n);
  for (std::int64_t p = 0; p < n; ++p) {
    for (std::int64_t t = 0; t < n; ++t) {
      const double v = values[static_cast<std::size_t>(p * n + t)];
      if (v < 0.005) continue;  // Ultralytics sets these to NaN: white, no text
      const cv::Rect r = cell_rect(n - 1, p, t);
      const cv::Scalar c = blues_scalar(v / vmax);
      cv::rectangle(m, r, c, cv::FILLED);
      if (!annotate) continue;
      const std::string s = cell_text(v, normalize);
      const double scale = fitting_scale(s, 1.3, 2, cell * 0.8, cell * 0.5);
      detail::put_text(m, s, {r.x + r.width / 2, r.y + r.height / 2}, scale, 2, 0.5, 0.5, text_color(c));
    }
  }
  std::vector<std::string> labels;
  const bool named = !names.empty() && names.size() < 99 && static_cast<std::int64_t>(names.size()) == nc;
  for (std::int64_t i = 0; i < n; ++i) {
    labels.push_back(named ? (i < nc ? names[static_cast<std::size_t>(i)] : "background") : std::to_string(i));
  }
  const int below = draw_tick_labels(m, labels, static_cast<int>(n));
  draw_color_bar(m, vmax);
  const std::string title = normalize ? "Confusion Matrix Normalized" : "Confusion Matrix";
  detail::put_text(m, title, {kLeft + kSide / 2, kTop / 2}, 1.8, 3, 0.5, 0.5);
  detail::put_text(m, "True", {kLeft + kSide / 2, std::min(kHeight - 60, kTop + kSide + below + 50)}, 1.5, 2, 0.5, 0.0);
  detail::put_text_vertical(m, "Predicted", {150, kTop + kSide / 2}, 1.5, 2, 0.0, 0.5);
  return detail::to_image(m);
}

}  // namespace yolotrain::plots
