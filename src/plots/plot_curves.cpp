#include "yolotrain/plots/plot_curves.hpp"

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdio>

#include "chart.hpp"
#include "yolotrain/metrics/ap.hpp"

namespace yolotrain::plots {
namespace {

constexpr int kCurveWidth = 2250, kCurveHeight = 1500;
const cv::Scalar kMeanBlue(255, 0, 0);  // matplotlib's "blue"

std::vector<double> row(const at::Tensor& t, std::int64_t i) {
  const at::Tensor r = t[i].to(at::kDouble).contiguous();
  return std::vector<double>(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
}

std::vector<double> mean_rows(const at::Tensor& t) {
  const at::Tensor r = t.to(at::kDouble).mean(0).contiguous();
  return std::vector<double>(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
}

std::string name_of(const metrics::DetMetrics& m, const std::vector<std::string>& names, std::size_t i) {
  const std::int64_t c = m.ap_class_index[i];
  return c >= 0 && c < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(c)] : std::to_string(c);
}

data::Image render(detail::Panel& panel) {
  panel.legend_outside = true;
  panel.fixed_unit_range = true;
  cv::Mat canvas(kCurveHeight, kCurveWidth, CV_8UC3, cv::Scalar(255, 255, 255));
  detail::draw_panel(canvas, cv::Rect(0, 0, kCurveWidth, kCurveHeight), panel);
  return detail::to_image(canvas);
}

bool has_curves(const metrics::DetMetrics& m) {
  return m.px.defined() && m.px.numel() > 0 && !m.ap_class_index.empty();
}

}  // namespace

std::string curve_file(Curve which) {
  switch (which) {
    case Curve::F1: return "F1_curve.png";
    case Curve::Precision: return "P_curve.png";
    case Curve::Recall: return "R_curve.png";
  }
  return "curve.png";
}

data::Image plot_pr_curve(const metrics::DetMetrics& m, const std::vector<std::string>& names) {
  detail::Panel panel;
  panel.title = "Precision-Recall Curve";
  panel.xlabel = "Recall";
  panel.ylabel = "Precision";
  if (has_curves(m)) {
    const std::vector<double> px = row(m.px.unsqueeze(0), 0);
    const std::size_t nc = m.ap_class_index.size();
    for (std::size_t i = 0; nc < 21 && i < nc; ++i) {
      char label[128];
      std::snprintf(label, sizeof label, "%s %.3f", name_of(m, names, i).c_str(), m.ap50[i]);
      panel.series.push_back(
          {px, row(m.prec_values, static_cast<std::int64_t>(i)), detail::cycle_color(i), label, false, false, 0});
    }
    for (std::size_t i = 0; nc >= 21 && i < nc; ++i) {  // many classes: grey lines, no legend rows
      panel.series.push_back(
          {px, row(m.prec_values, static_cast<std::int64_t>(i)), cv::Scalar(128, 128, 128), "", false, false, 0});
    }
    char label[64];
    std::snprintf(label, sizeof label, "all classes %.3f mAP@0.5", m.map50);
    panel.series.push_back({px, mean_rows(m.prec_values), kMeanBlue, label, false, false, 3});
  }
  return render(panel);
}

data::Image plot_mc_curve(const metrics::DetMetrics& m, const std::vector<std::string>& names, Curve which) {
  detail::Panel panel;
  const char* ylabel = which == Curve::F1 ? "F1" : which == Curve::Precision ? "Precision" : "Recall";
  panel.title = std::string(ylabel) + "-Confidence Curve";
  panel.xlabel = "Confidence";
  panel.ylabel = ylabel;
  if (has_curves(m)) {
    const at::Tensor& curves = which == Curve::F1 ? m.f1_curve : which == Curve::Precision ? m.p_curve : m.r_curve;
    const std::vector<double> px = row(m.px.unsqueeze(0), 0);
    const std::size_t nc = m.ap_class_index.size();
    for (std::size_t i = 0; i < nc; ++i) {
      const bool legend = nc < 21;
      panel.series.push_back({px, row(curves, static_cast<std::int64_t>(i)),
                              legend ? detail::cycle_color(i) : cv::Scalar(128, 128, 128),
                              legend ? name_of(m, names, i) : "", false, false, 0});
    }
    const std::vector<double> y = metrics::smooth(mean_rows(curves), 0.05);
    const std::size_t best = static_cast<std::size_t>(std::max_element(y.begin(), y.end()) - y.begin());
    char label[64];
    std::snprintf(label, sizeof label, "all classes %.2f at %.3f", y[best], px[best]);
    panel.series.push_back({px, y, kMeanBlue, label, false, false, 3});
  }
  return render(panel);
}

}  // namespace yolotrain::plots
