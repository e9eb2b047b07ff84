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

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(trim(cell));
  return out;
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

data::Image plot_results(const std::string& results_csv) {
  std::stringstream in(results_csv);
  std::string line;
  if (!std::getline(in, line)) throw Error("plot_results: results.csv is empty");
  const std::vector<std::string> header = split(line);
  std::vector<std::vector<double>> columns(header.size());
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (cells.size() != header.size()) continue;  // a torn or foreign row
    for (std::size_t c = 0; c < cells.size(); ++c) columns[c].push_back(std::atof(cells[c].c_str()));
  }
  auto column = [&](const std::string& wanted) -> const std::vector<double>& {
    auto it = std::find(header.begin(), header.end(), wanted);
    const auto dfl = wanted.find("dfl_loss");  // a head without DFL (YOLO26) has l1_loss there
    std::string name = wanted;
    if (it == header.end() && dfl != std::string::npos) {
      name = name.replace(dfl, 3, "l1");
      it = std::find(header.begin(), header.end(), name);
    }
    if (it == header.end()) throw Error("plot_results: results.csv has no column '" + name + "'");
    return columns[static_cast<std::size_t>(it - header.begin())];
  };
  const char* panels[] = {"train/box_loss",    "train/cls_loss",       "train/dfl_loss", "metrics/precision(B)",
                          "metrics/recall(B)", "val/box_loss",         "val/cls_loss",   "val/dfl_loss",
                          "metrics/mAP50(B)",  "metrics/mAP50-95(B)"};
  const std::vector<double>& epochs = column("epoch");
  const int width = 2400, height = 1200, cols = 5, rows = 2;
  cv::Mat canvas(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  for (int i = 0; i < rows * cols; ++i) {
    const std::vector<double>& y = column(panels[i]);
    detail::Panel panel;
    panel.title = header[static_cast<std::size_t>(&y - columns.data())];
    panel.series.push_back({epochs, y, detail::kBlue, "results", true, false, 1});
    panel.series.push_back({epochs, gaussian_filter1d(y, 3), detail::kOrange, "smooth", false, true, 1});
    panel.legend = i == 1;  // Ultralytics: ax[1].legend()
    const cv::Rect area((i % cols) * width / cols, (i / cols) * height / rows, width / cols, height / rows);
    detail::draw_panel(canvas, area, panel);
  }
  return detail::to_image(canvas);
}

}  // namespace yolotrain::plots
