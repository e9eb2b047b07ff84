#include "yolotrain/plots/plot_results.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "chart.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::plots {
namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// scipy's "reflect": (d c b a | a b c d | d c b a).
double reflected(const std::vector<double>& y, long i) {
  const long n = static_cast<long>(y.size());
  while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
  return y[static_cast<std::size_t>(i)];
}

}  // namespace

std::vector<double> gaussian_filter1d(const std::vector<double>& y, double sigma) {
  const long radius = static_cast<long>(4.0 * sigma + 0.5);
  std::vector<double> weights;
  double sum = 0;
  for (long k = -radius; k <= radius; ++k) {
    weights.push_back(std::exp(-0.5 * static_cast<double>(k * k) / (sigma * sigma)));
    sum += weights.back();
  }
  std::vector<double> out(y.size(), 0.0);
  if (y.empty()) return out;
  for (long i = 0; i < static_cast<long>(y.size()); ++i) {
    double v = 0;
    for (long k = -radius; k <= radius; ++k) v += weights[static_cast<std::size_t>(k + radius)] * reflected(y, i + k);
    out[static_cast<std::size_t>(i)] = v / sum;
  }
  return out;
}

std::vector<std::string> results_csv_cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(trim(cell));
  return out;
}

data::Image plot_results(const std::string& results_csv) {
  std::stringstream in(results_csv);
  std::string line;
  if (!std::getline(in, line)) throw Error("plot_results: results.csv is empty");
  const std::vector<std::string> header = results_csv_cells(line);
  std::vector<std::vector<double>> columns(header.size());
  while (std::getline(in, line)) {
    const auto cells = results_csv_cells(line);
    if (cells.size() != header.size()) continue;  // a torn or foreign row
    for (std::size_t c = 0; c < cells.size(); ++c) columns[c].push_back(std::atof(cells[c].c_str()));
  }
  // Ultralytics 8.4's plot_results: the "loss" columns' first half, the "metric" columns' first
  // half, then the second halves, in two rows; 200 dpi of a (n + 2) x 6 inch figure.
  std::vector<std::size_t> losses, metrics;
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (header[c].find("loss") != std::string::npos) losses.push_back(c);
    else if (header[c].find("metric") != std::string::npos) metrics.push_back(c);
  }
  std::vector<std::size_t> panels(losses.begin(), losses.begin() + static_cast<long>(losses.size() / 2));
  panels.insert(panels.end(), metrics.begin(), metrics.begin() + static_cast<long>(metrics.size() / 2));
  panels.insert(panels.end(), losses.begin() + static_cast<long>(losses.size() / 2), losses.end());
  panels.insert(panels.end(), metrics.begin() + static_cast<long>(metrics.size() / 2), metrics.end());
  if (header.empty() || header[0] != "epoch" || panels.size() < 2)
    throw Error("plot_results: results.csv has no epoch column or no loss and metric columns");
  const std::vector<double>& epochs = columns[0];
  const int cols = static_cast<int>(panels.size() / 2), rows = 2;
  const int width = (static_cast<int>(panels.size()) + 2) * 200, height = 1200;
  cv::Mat canvas(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  for (int i = 0; i < rows * cols; ++i) {
    const std::vector<double>& y = columns[panels[static_cast<std::size_t>(i)]];
    detail::Panel panel;
    panel.title = header[panels[static_cast<std::size_t>(i)]];
    panel.series.push_back({epochs, y, detail::kBlue, "results", true, false, 1});
    panel.series.push_back({epochs, gaussian_filter1d(y, 3), detail::kOrange, "smooth", false, true, 1});
    panel.legend = i == 1;  // Ultralytics: ax[1].legend()
    const cv::Rect area((i % cols) * width / cols, (i / cols) * height / rows, width / cols, height / rows);
    detail::draw_panel(canvas, area, panel);
  }
  return detail::to_image(canvas);
}

}  // namespace yolotrain::plots
