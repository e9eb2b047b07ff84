#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "numpy_like.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/metrics/ap.hpp"

namespace yolotrain::metrics {

namespace detail {

double numpy_sum(const double* a, std::size_t n, std::size_t stride) {
  if (n < 8) {
    double res = 0.;
    for (std::size_t i = 0; i < n; ++i) res += a[i * stride];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j * stride];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[(i + j) * stride];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i * stride];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_sum(a, n2, stride) + numpy_sum(a + n2 * stride, n - n2, stride);
}

std::vector<double> linspace(double start, double stop, std::size_t num) {
  std::vector<double> y(num);
  if (num == 0) return y;
  const double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  for (std::size_t i = 0; i < num; ++i) y[i] = static_cast<double>(i) * step + start;
  if (num > 1) y[num - 1] = stop;
  return y;
}

}  // namespace detail

namespace {

std::vector<double> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kDouble).cpu().contiguous().reshape({-1});
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

at::Tensor to_tensor(const std::vector<double>& v) {
  return at::tensor(v, at::kDouble);
}

}  // namespace

std::vector<double> interp(const std::vector<double>& x, const std::vector<double>& xp,
                           const std::vector<double>& fp, std::optional<double> left,
                           std::optional<double> right) {
  if (xp.empty() || xp.size() != fp.size()) {
    throw Error("interp: xp and fp must be non-empty and of equal length");
  }
  const double lval = left.value_or(fp.front()), rval = right.value_or(fp.back());
  const std::size_t n = xp.size();
  std::vector<double> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double xv = x[k];
    if (xv > xp[n - 1]) {
      out[k] = rval;
    } else if (xv < xp[0]) {
      out[k] = lval;
    } else {
      // Last index j with xp[j] <= xv.
      const std::size_t j =
          static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), xv) - xp.begin()) - 1;
      if (j == n - 1 || xp[j] == xv) {
        out[k] = fp[j];
      } else {
        const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
        out[k] = slope * (xv - xp[j]) + fp[j];
      }
    }
  }
  return out;
}

std::tuple<double, std::vector<double>, std::vector<double>> compute_ap(
    const std::vector<double>& recall, const std::vector<double>& precision, UltralyticsRules rules) {
  std::vector<double> mrec{0.0}, mpre{1.0};
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  if (rules == UltralyticsRules::V84) {  // 8.4: the envelope drops to 0 at the last recall reached
    mrec.push_back(recall.empty() ? 1.0 : recall.back());
    mpre.push_back(0.0);
  }
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (std::size_t i = mpre.size() - 1; i-- > 0;) mpre[i] = std::max(mpre[i], mpre[i + 1]);
  const std::vector<double> x = detail::linspace(0, 1, 101);
  const std::vector<double> y = interp(x, mrec, mpre);
  std::vector<double> terms(x.size() - 1);
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    terms[i] = (x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2.0;  // np.trapz
  }
  return {detail::numpy_sum(terms), mpre, mrec};
}

std::vector<double> smooth(const std::vector<double>& y, double f) {
  if (y.empty()) return {};
  const auto nf =
      static_cast<std::size_t>(std::nearbyint(static_cast<double>(y.size()) * f * 2)) / 2 + 1;
  std::vector<double> yp(nf / 2, y.front());
  yp.insert(yp.end(), y.begin(), y.end());
  yp.insert(yp.end(), nf / 2, y.back());
  const double w = 1.0 / static_cast<double>(nf);
  std::vector<double> out(yp.size() - nf + 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    double s = 0;
    for (std::size_t k = 0; k < nf; ++k) s += yp[i + k] * w;
    out[i] = s;
  }
  return out;
}

ApResult ap_per_class(const at::Tensor& tp_in, const at::Tensor& conf_in,
                      const at::Tensor& pred_cls_in, const at::Tensor& target_cls_in, double eps,
                      UltralyticsRules rules) {
  const int64_t n = conf_in.numel();
  if (tp_in.dim() != 2 || tp_in.size(0) != n || pred_cls_in.numel() != n) {
    throw Error("ap_per_class: tp [N, T], conf [N] and pred_cls [N] disagree: " +
                c10::str(tp_in.sizes()) + ", " + c10::str(conf_in.sizes()) + ", " +
                c10::str(pred_cls_in.sizes()));
  }
  const int64_t t = tp_in.size(1);
  // Sort by descending confidence (stable).
  std::vector<double> conf_raw = to_vector(conf_in);
  std::vector<std::size_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return -conf_raw[a] < -conf_raw[b]; });
  const std::vector<double> tp_raw = to_vector(tp_in), cls_raw = to_vector(pred_cls_in);

  std::map<double, int64_t> counts;  // np.unique(target_cls, return_counts=True)
  for (double c : to_vector(target_cls_in)) ++counts[c];
  const auto nc = static_cast<int64_t>(counts.size());
  const std::vector<double> x = detail::linspace(0, 1, 1000);
  std::vector<double> neg_x(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) neg_x[k] = -x[k];

  at::Tensor ap = at::zeros({nc, t}, at::kDouble);
  at::Tensor p_curve = at::zeros({nc, 1000}, at::kDouble), r_curve = at::zeros({nc, 1000}, at::kDouble);
  at::Tensor prec_values = at::zeros({nc, 1000}, at::kDouble);
  std::vector<double> classes, nt;
  int64_t ci = -1;
  for (const auto& [c, n_l] : counts) {
    ++ci;
    classes.push_back(c);
    nt.push_back(static_cast<double>(n_l));
    std::vector<std::size_t> rows;  // this class's detections, by descending confidence
    for (std::size_t k : order) {
      if (cls_raw[k] == c) rows.push_back(k);
    }
    if (rows.empty() || n_l == 0) continue;
    const std::size_t np_ = rows.size();
    std::vector<double> neg_conf(np_);
    for (std::size_t k = 0; k < np_; ++k) neg_conf[k] = -conf_raw[rows[k]];
    std::vector<std::vector<double>> recall(static_cast<std::size_t>(t)), precision(recall.size());
    for (int64_t j = 0; j < t; ++j) {
      double tpc = 0, fpc = 0;
      for (std::size_t k = 0; k < np_; ++k) {
        const double v = tp_raw[rows[k] * static_cast<std::size_t>(t) + static_cast<std::size_t>(j)];
        tpc += v;
        fpc += 1 - v;
        recall[j].push_back(tpc / (static_cast<double>(n_l) + eps));
        precision[j].push_back(tpc / (tpc + fpc));
      }
    }
    const auto r = interp(neg_x, neg_conf, recall[0], 0.0);
    const auto p = interp(neg_x, neg_conf, precision[0], 1.0);
    std::copy(r.begin(), r.end(), r_curve[ci].data_ptr<double>());
    std::copy(p.begin(), p.end(), p_curve[ci].data_ptr<double>());
    for (int64_t j = 0; j < t; ++j) {
      const auto [value, mpre, mrec] = compute_ap(recall[j], precision[j], rules);
      ap.data_ptr<double>()[ci * t + j] = value;
      if (j == 0) {  // Ultralytics: prec_values.append(np.interp(x, mrec, mpre))
        const auto pr = interp(x, mrec, mpre);
        std::copy(pr.begin(), pr.end(), prec_values[ci].data_ptr<double>());
      }
    }
  }
  const at::Tensor f1_curve = 2 * p_curve * r_curve / (p_curve + r_curve + eps);
  std::size_t best = 0;
  if (nc > 0) {
    std::vector<double> mean_f1(1000, 0.0);  // f1_curve.mean(0): rows added in order
    const double* f = f1_curve.data_ptr<double>();
    for (int64_t c = 0; c < nc; ++c) {
      for (std::size_t k = 0; k < 1000; ++k) mean_f1[k] += f[c * 1000 + static_cast<int64_t>(k)];
    }
    for (double& v : mean_f1) v /= static_cast<double>(nc);
    const std::vector<double> s = smooth(mean_f1, 0.1);
    best = static_cast<std::size_t>(std::max_element(s.begin(), s.end()) - s.begin());
  }
  const auto bi = static_cast<int64_t>(best);
  ApResult res;
  res.p = p_curve.select(1, bi).clone();
  res.r = r_curve.select(1, bi).clone();
  res.f1 = f1_curve.select(1, bi).clone();
  res.tp = (res.r * to_tensor(nt)).round();
  res.fp = (res.tp / (res.p + eps) - res.tp).round();
  res.ap = ap;
  res.unique_classes = to_tensor(classes).to(at::kLong);
  res.p_curve = p_curve;
  res.r_curve = r_curve;
  res.f1_curve = f1_curve;
  res.x = to_tensor(x);
  res.prec_values = prec_values;
  return res;
}

}  // namespace yolotrain::metrics
