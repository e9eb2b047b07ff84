#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "yolotrain/error.hpp"
#include "yolotrain/metrics/ap.hpp"

namespace yolotrain::metrics {

namespace {

struct Pair {
  int64_t label;
  int64_t det;
  float iou;
};

// The pairs that survive Ultralytics' two np.unique passes at one threshold.
std::vector<Pair> greedy_pairs(std::vector<Pair> matches) {
  if (matches.size() <= 1) return matches;
  // argsort() ascending (stable, as NumPy on small arrays), then [::-1].
  std::stable_sort(matches.begin(), matches.end(),
                   [](const Pair& a, const Pair& b) { return a.iou < b.iou; });
  std::reverse(matches.begin(), matches.end());
  // np.unique(matches[:, 1], return_index=True): first pair per detection, by detection index.
  std::vector<Pair> by_det;
  std::vector<size_t> order(matches.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return matches[a].det < matches[b].det; });
  for (size_t k : order) {
    if (by_det.empty() || by_det.back().det != matches[k].det) by_det.push_back(matches[k]);
  }
  // np.unique(matches[:, 0], return_index=True): first pair per label in that order.
  std::vector<Pair> out;
  std::vector<size_t> order2(by_det.size());
  std::iota(order2.begin(), order2.end(), 0);
  std::stable_sort(order2.begin(), order2.end(),
                   [&](size_t a, size_t b) { return by_det[a].label < by_det[b].label; });
  for (size_t k : order2) {
    if (out.empty() || out.back().label != by_det[k].label) out.push_back(by_det[k]);
  }
  return out;
}

}  // namespace

at::Tensor iou_thresholds() { return at::linspace(0.5, 0.95, 10, at::kFloat); }

at::Tensor match_predictions(const at::Tensor& pred_cls, const at::Tensor& true_cls,
                             const at::Tensor& iou, const at::Tensor& iouv) {
  const int64_t n = pred_cls.numel(), m = true_cls.numel(), t = iouv.numel();
  if (iou.dim() != 2 || iou.size(0) != m || iou.size(1) != n) {
    throw Error("match_predictions: iou must be [labels, detections] = [" + std::to_string(m) +
                ", " + std::to_string(n) + "], got " + c10::str(iou.sizes()));
  }
  at::Tensor correct = at::zeros({n, t}, at::kBool);
  if (n == 0 || m == 0) return correct.to(pred_cls.device());
  const at::Tensor correct_class = true_cls.reshape({-1, 1}) == pred_cls.reshape({1, -1});
  const at::Tensor masked = (iou * correct_class).to(at::kFloat).cpu().contiguous();
  const at::Tensor thr = iouv.to(at::kFloat).cpu().contiguous();
  const float* v = masked.data_ptr<float>();
  const float* th = thr.data_ptr<float>();
  bool* out = correct.data_ptr<bool>();
  for (int64_t ti = 0; ti < t; ++ti) {
    std::vector<Pair> matches;
    for (int64_t l = 0; l < m; ++l) {
      for (int64_t d = 0; d < n; ++d) {
        if (v[l * n + d] >= th[ti]) matches.push_back({l, d, v[l * n + d]});
      }
    }
    for (const Pair& p : greedy_pairs(std::move(matches))) out[p.det * t + ti] = true;
  }
  return correct.to(pred_cls.device());
}

}  // namespace yolotrain::metrics
