#include "yolotrain/metrics/confusion_matrix.hpp"
#include "yolotrain/metrics/obb.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/boxes.hpp"

namespace yolotrain::metrics {
namespace {

struct Match {
  std::int64_t label, detection;
  float iou;
};

// Ultralytics' steps: sort by IoU descending, keep the first row of each detection, sort again,
// keep the first row of each label (np.unique keeps the first occurrence; the result is in
// ascending label order). numpy's argsort()[::-1] reverses an ascending sort, so among equal IoUs
// the later pair comes first: a stable ascending sort reversed gives the same order.
std::vector<Match> unique_matches(std::vector<Match> m) {
  auto by_iou_descending = [](std::vector<Match>& v) {
    std::stable_sort(v.begin(), v.end(), [](const Match& a, const Match& b) { return a.iou < b.iou; });
    std::reverse(v.begin(), v.end());
  };
  auto first_of_each = [](const std::vector<Match>& v, bool by_label) {
    std::vector<Match> out;
    for (const Match& x : v) {
      const std::int64_t key = by_label ? x.label : x.detection;
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const Match& o) { return (by_label ? o.label : o.detection) == key; });
      if (!seen) out.push_back(x);
    }
    std::sort(out.begin(), out.end(), [&](const Match& a, const Match& b) {
      return by_label ? a.label < b.label : a.detection < b.detection;
    });
    return out;
  };
  if (m.size() <= 1) return m;
  by_iou_descending(m);
  m = first_of_each(m, false);
  by_iou_descending(m);
  return first_of_each(m, true);
}

}  // namespace

ConfusionMatrix::ConfusionMatrix(std::int64_t nc, double conf, double iou_thres)
    : nc_(nc), conf_(conf == 0.001 ? 0.25 : conf), iou_thres_(iou_thres) {
  if (nc < 1) throw Error("ConfusionMatrix: nc must be positive, got " + std::to_string(nc));
  counts_.assign(static_cast<std::size_t>((nc + 1) * (nc + 1)), 0.0);
}

ConfusionMatrix ConfusionMatrix::classification(std::int64_t nc) {
  ConfusionMatrix m(nc);
  m.classification_ = true;
  m.counts_.assign(static_cast<std::size_t>(nc * nc), 0.0);
  return m;
}

void ConfusionMatrix::process_class(std::int64_t predicted, std::int64_t truth) { cell(predicted, truth) += 1; }

std::size_t ConfusionMatrix::index(std::int64_t predicted, std::int64_t truth) const {
  const std::int64_t last = size() - 1;
  if (predicted < 0 || predicted > last || truth < 0 || truth > last) {
    throw Error("ConfusionMatrix: class " + std::to_string(std::max(predicted, truth)) + " outside 0.." +
                std::to_string(nc_ - 1));
  }
  return static_cast<std::size_t>(predicted * size() + truth);
}

double& ConfusionMatrix::cell(std::int64_t predicted, std::int64_t truth) { return counts_[index(predicted, truth)]; }

double ConfusionMatrix::at(std::int64_t predicted, std::int64_t truth) const {
  return counts_[index(predicted, truth)];
}

void ConfusionMatrix::process_batch(const at::Tensor& detections, const at::Tensor& gt_bboxes,
                                    const at::Tensor& gt_cls) {
  const at::Tensor cls = gt_cls.reshape({-1}).to(at::kLong).cpu();
  const std::int64_t nl = cls.size(0);
  const auto* gc = cls.data_ptr<std::int64_t>();
  at::Tensor det;
  if (detections.defined()) {
    det = detections.to(at::kFloat).cpu();
    det = det.index({det.select(1, 4) > conf_}).contiguous();
  }
  if (nl == 0) {
    for (std::int64_t i = 0; det.defined() && i < det.size(0); ++i) {
      cell(static_cast<std::int64_t>(det[i][5].item<float>()), nc_) += 1;
    }
    return;
  }
  if (!detections.defined()) {
    for (std::int64_t i = 0; i < nl; ++i) cell(nc_, gc[i]) += 1;
    return;
  }
  const at::Tensor dc = det.select(1, 5).to(at::kLong).contiguous();
  const auto* dcls = dc.data_ptr<std::int64_t>();
  // Oriented boxes (gt [m, 5], detections x y w h conf cls angle): ProbIoU, as Ultralytics' is_obb branch.
  const bool obb = gt_bboxes.dim() == 2 && gt_bboxes.size(1) == 5;
  const at::Tensor gt = gt_bboxes.to(at::kFloat).cpu();
  const at::Tensor iou = (obb ? batch_probiou(gt, at::cat({det.slice(1, 0, 4), det.slice(1, -1)}, 1))
                              : box_iou(gt.reshape({-1, 4}), det.slice(1, 0, 4)))
                             .contiguous();
  std::vector<Match> candidates;
  const auto a = iou.accessor<float, 2>();
  for (std::int64_t i = 0; i < iou.size(0); ++i) {  // torch.where's order: row-major
    for (std::int64_t j = 0; j < iou.size(1); ++j) {
      if (a[i][j] > iou_thres_) candidates.push_back({i, j, a[i][j]});
    }
  }
  const std::vector<Match> matches = unique_matches(std::move(candidates));
  const bool any = !matches.empty();
  for (std::int64_t i = 0; i < nl; ++i) {
    const auto n = std::count_if(matches.begin(), matches.end(), [&](const Match& m) { return m.label == i; });
    if (any && n == 1) {
      const auto m = std::find_if(matches.begin(), matches.end(), [&](const Match& x) { return x.label == i; });
      cell(dcls[m->detection], gc[i]) += 1;  // correct (or a class confusion)
    } else {
      cell(nc_, gc[i]) += 1;  // a missed object
    }
  }
  if (!any) return;  // Ultralytics 8.2: unmatched detections count only when something matched
  for (std::int64_t j = 0; j < det.size(0); ++j) {
    const bool matched = std::any_of(matches.begin(), matches.end(), [&](const Match& m) { return m.detection == j; });
    if (!matched) cell(dcls[j], nc_) += 1;  // a detection of nothing
  }
}

std::pair<std::vector<double>, std::vector<double>> ConfusionMatrix::tp_fp() const {
  std::vector<double> tp, fp;
  for (std::int64_t c = 0; c < nc_; ++c) {
    double row = 0;
    for (std::int64_t t = 0; t < size(); ++t) row += at(c, t);
    tp.push_back(at(c, c));
    fp.push_back(row - at(c, c));
  }
  return {tp, fp};
}

std::string ConfusionMatrix::to_csv(const std::vector<std::string>& names, bool normalize) const {
  auto name = [&](std::int64_t c) {
    if (c == nc_) return std::string("background");
    return c < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(c)] : std::to_string(c);
  };
  const std::int64_t n = size();
  std::vector<double> column_sum(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t p = 0; p < n; ++p) {
    for (std::int64_t t = 0; t < n; ++t) column_sum[static_cast<std::size_t>(t)] += at(p, t);
  }
  std::string csv = "Predicted \\ True";
  for (std::int64_t t = 0; t < n; ++t) csv += "," + name(t);
  csv += "\n";
  for (std::int64_t p = 0; p < n; ++p) {
    csv += name(p);
    for (std::int64_t t = 0; t < n; ++t) {
      char buf[32];
      const double v = at(p, t);
      if (normalize) std::snprintf(buf, sizeof buf, ",%.4f", v / (column_sum[static_cast<std::size_t>(t)] + 1e-9));
      else std::snprintf(buf, sizeof buf, ",%.0f", v);
      csv += buf;
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace yolotrain::metrics
