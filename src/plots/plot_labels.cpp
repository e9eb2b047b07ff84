#include "yolotrain/plots/plot_labels.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "chart.hpp"
#include "yolotrain/plots/box_label.hpp"

namespace yolotrain::plots {
namespace {

constexpr int kTile = 800, kBins = 50;
constexpr double kScale = 1.6;  // draw_ticks' text scale: ticks ~ matplotlib's 10 pt at 200 dpi
const cv::Scalar kLight(246, 240, 236), kDark(180, 119, 31);  // seaborn's "light:C0" ends (B, G, R)

cv::Scalar bgr_scalar(const std::array<std::uint8_t, 3>& c) { return cv::Scalar(c[0], c[1], c[2]); }

cv::Rect plot_area(int tile_x, int tile_y, int bottom = 130) {
  return cv::Rect(tile_x + 130, tile_y + 30, kTile - 160, kTile - 30 - bottom);
}

void axis_labels(cv::Mat& m, const detail::Axes& a, const std::string& xlabel, const std::string& ylabel) {
  const int th = detail::line_thickness(kScale);
  if (!xlabel.empty())
    detail::put_text(m, xlabel, {a.plot.x + a.plot.width / 2, a.plot.y + a.plot.height + 60}, 0.9, th, 0.5, 0.0);
  detail::put_text_vertical(m, ylabel, {a.plot.x - 125, a.plot.y + a.plot.height / 2}, 0.9, th, 0.0, 0.5);
}

// The instances per class as bars, the names upright below them.
void class_histogram(cv::Mat& m, const std::vector<data::Box>& boxes, const std::vector<std::string>& names) {
  int nc = 0;
  for (const auto& b : boxes) nc = std::max(nc, b.cls + 1);
  std::vector<double> count(static_cast<std::size_t>(std::max(nc, 1)), 0.0);
  for (const auto& b : boxes) count[static_cast<std::size_t>(b.cls)] += 1;
  const bool named = !names.empty() && names.size() < 30;
  int longest = 0, base = 0;
  for (const auto& n : names)
    longest = std::max(longest, cv::getTextSize(n, cv::FONT_HERSHEY_SIMPLEX, 0.75, 2, &base).width);
  const int bottom = named ? std::clamp(longest + 40, 130, 330) : 130;
  const double ymax = std::max(1.0, *std::max_element(count.begin(), count.end())) * 1.05;
  const int ticks = named ? std::max(nc, static_cast<int>(names.size())) : nc;
  const double margin = 0.05 * std::max(ticks, 1);
  const detail::Axes a{plot_area(0, 0, bottom), -0.5 - margin, ticks - 0.5 + margin, 0, ymax};
  detail::draw_ticks(m, a, kScale, false, false, !named);
  for (int i = 0; i < nc; ++i) {
    const cv::Point2d lo = a.at(i - 0.4, 0), hi = a.at(i + 0.4, count[static_cast<std::size_t>(i)]);
    cv::rectangle(m, cv::Point(cvRound(lo.x), cvRound(hi.y)), cv::Point(cvRound(hi.x), cvRound(lo.y)),
                  bgr_scalar(class_color(i)), cv::FILLED);
  }
  for (int i = 0; named && i < static_cast<int>(names.size()); ++i) {
    const int x = cvRound(a.at(i, 0).x);
    cv::line(m, {x, a.plot.y + a.plot.height}, {x, a.plot.y + a.plot.height + 6}, cv::Scalar(60, 60, 60), 2);
    detail::put_text_vertical(m, names[static_cast<std::size_t>(i)], {x, a.plot.y + a.plot.height + 12}, 0.75, 2, 0.5,
                              0.0);
  }
  axis_labels(m, a, named ? "" : "classes", "instances");
}

// The first 500 boxes, centred, on a white square (Ultralytics' 1000 x 1000 image), axes off.
void centred_boxes(cv::Mat& m, const std::vector<data::Box>& boxes) {
  cv::Mat square(1000, 1000, CV_8UC3, cv::Scalar(255, 255, 255));
  for (std::size_t i = 0; i < boxes.size() && i < 500; ++i) {
    const auto& b = boxes[i];
    const cv::Point p1(cvRound(500 - b.w * 500), cvRound(500 - b.h * 500)),
        p2(cvRound(500 + b.w * 500), cvRound(500 + b.h * 500));
    cv::rectangle(square, p1, p2, bgr_scalar(class_color(b.cls)), 1);
  }
  const int side = kTile - 100;
  cv::Mat shown;
  cv::resize(square, shown, cv::Size(side, side), 0, 0, cv::INTER_AREA);
  shown.copyTo(m(cv::Rect(kTile + 50, 50, side, side)));
}

// A 50 x 50 histogram of (u, v), as seaborn's histplot(pmax=0.9) colours it.
void histogram_2d(cv::Mat& m, int tile_x, int tile_y, const std::vector<data::Box>& boxes,
                  const std::function<std::pair<double, double>(const data::Box&)>& uv, const std::string& xlabel,
                  const std::string& ylabel) {
  double u0 = 1e300, u1 = -1e300, v0 = 1e300, v1 = -1e300;
  for (const auto& b : boxes) {
    const auto [u, v] = uv(b);
    u0 = std::min(u0, u), u1 = std::max(u1, u), v0 = std::min(v0, v), v1 = std::max(v1, v);
  }
  if (boxes.empty()) u0 = v0 = 0, u1 = v1 = 1;
  if (!(u1 > u0)) u0 -= 0.5, u1 += 0.5;  // numpy's range for one value
  if (!(v1 > v0)) v0 -= 0.5, v1 += 0.5;
  std::vector<double> cells(kBins * kBins, 0.0);
  const auto bin = [](double x, double lo, double hi) {
    return std::min(kBins - 1, static_cast<int>((x - lo) / (hi - lo) * kBins));
  };
  for (const auto& b : boxes) {
    const auto [u, v] = uv(b);
    cells[static_cast<std::size_t>(bin(v, v0, v1) * kBins + bin(u, u0, u1))] += 1;
  }
  // seaborn's _quantile_to_level: the count at which the densest cells hold 1 - pmax of all.
  std::vector<double> sorted(cells);
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double total = 0, cum = 0, vmax = sorted.empty() ? 1 : sorted.front(), vmin = 1e300;
  for (double c : cells) total += c, vmin = c > 0 ? std::min(vmin, c) : vmin;
  for (double c : sorted) {
    cum += c;
    vmax = c;
    if (total > 0 && cum / total >= 0.1) break;
  }
  const detail::Axes a{plot_area(tile_x, tile_y), u0, u1, v0, v1};
  for (int j = 0; j < kBins; ++j) {
    for (int i = 0; i < kBins; ++i) {
      const double c = cells[static_cast<std::size_t>(j * kBins + i)];
      if (c <= 0) continue;  // masked: the white shows
      const double t = vmax > vmin ? std::clamp((c - vmin) / (vmax - vmin), 0.0, 1.0) : 1.0;
      const cv::Point2d p = a.at(u0 + (u1 - u0) * i / kBins, v0 + (v1 - v0) * (j + 1) / kBins);
      const cv::Point2d q = a.at(u0 + (u1 - u0) * (i + 1) / kBins, v0 + (v1 - v0) * j / kBins);
      cv::rectangle(m, cv::Point(cvRound(p.x), cvRound(p.y)), cv::Point(cvRound(q.x) - 1, cvRound(q.y) - 1),
                    kLight * (1 - t) + kDark * t, cv::FILLED);
    }
  }
  detail::draw_ticks(m, a, kScale, false, false);
  axis_labels(m, a, xlabel, ylabel);
}

}  // namespace

data::Image plot_labels(const std::vector<data::Box>& boxes, const std::vector<std::string>& names) {
  cv::Mat m(2 * kTile, 2 * kTile, CV_8UC3, cv::Scalar(255, 255, 255));
  class_histogram(m, boxes, names);
  centred_boxes(m, boxes);
  histogram_2d(m, 0, kTile, boxes, [](const data::Box& b) { return std::pair<double, double>(b.x, b.y); }, "x", "y");
  histogram_2d(m, kTile, kTile, boxes, [](const data::Box& b) { return std::pair<double, double>(b.w, b.h); }, "width",
               "height");
  return detail::to_image(m);
}

}  // namespace yolotrain::plots
