#include "yolotrain/metrics/det_metrics.hpp"

#include <string>

#include "numpy_like.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::metrics {

namespace {

std::vector<double> column(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kDouble).cpu().contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

std::vector<double> DetMetrics::maps(int64_t nc) const {
  std::vector<double> out(static_cast<std::size_t>(std::max<int64_t>(nc, 0)), map);
  for (std::size_t i = 0; i < ap_class_index.size(); ++i) {
    const int64_t c = ap_class_index[i];
    if (c >= 0 && c < nc) out[static_cast<std::size_t>(c)] = ap[i];
  }
  return out;
}

DetMetrics det_metrics(const at::Tensor& tp, const at::Tensor& conf, const at::Tensor& pred_cls,
                       const at::Tensor& target_cls, UltralyticsRules rules) {
  DetMetrics m;
  m.all_ap = at::zeros({0, tp.dim() == 2 ? tp.size(1) : 10}, at::kDouble);
  if (tp.numel() == 0 || !tp.to(at::kBool).any().item<bool>()) return m;
  const ApResult r = ap_per_class(tp, conf, pred_cls, target_cls, 1e-16, rules);
  m.p = column(r.p);
  m.r = column(r.r);
  m.f1 = column(r.f1);
  m.all_ap = r.ap;
  m.px = r.x;
  m.prec_values = r.prec_values;
  m.f1_curve = r.f1_curve;
  m.p_curve = r.p_curve;
  m.r_curve = r.r_curve;
  const at::Tensor idx = r.unique_classes.contiguous();
  m.ap_class_index.assign(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + idx.numel());
  const int64_t nc = r.ap.size(0), t = r.ap.size(1);
  const at::Tensor ap = r.ap.contiguous();
  const double* a = ap.data_ptr<double>();
  for (int64_t c = 0; c < nc; ++c) {
    m.ap50.push_back(a[c * t]);
    m.ap.push_back(detail::numpy_sum(a + c * t, static_cast<std::size_t>(t)) / static_cast<double>(t));
  }
  m.mp = detail::numpy_mean(m.p);
  m.mr = detail::numpy_mean(m.r);
  if (nc > 0) {
    const auto rows = static_cast<std::size_t>(nc), stride = static_cast<std::size_t>(t);
    m.map50 = detail::numpy_sum(a, rows, stride) / static_cast<double>(nc);
    if (t > 5) m.map75 = detail::numpy_sum(a + 5, rows, stride) / static_cast<double>(nc);
    m.map = detail::numpy_sum(a, rows * stride) / static_cast<double>(nc * t);
  }
  // (np.array(mean_results()) * w).sum(): w = [0, 0, 0.1, 0.9] to 8.3, [0, 0, 0, 1] since 8.4
  const double w50 = rules == UltralyticsRules::V84 ? 0.0 : 0.1, w = rules == UltralyticsRules::V84 ? 1.0 : 0.9;
  m.fitness = ((0.0 + m.mp * 0.0) + m.mr * 0.0) + m.map50 * w50 + m.map * w;
  return m;
}

}  // namespace yolotrain::metrics
