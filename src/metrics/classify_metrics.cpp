#include "yolotrain/metrics/classify_metrics.hpp"

#include <ATen/ATen.h>

#include <algorithm>

#include "yolotrain/error.hpp"

namespace yolotrain::metrics {

ClassifyValidator::ClassifyValidator(std::int64_t nc)
    : nc_(nc), per_class_(static_cast<std::size_t>(std::max<std::int64_t>(nc, 0)), 0),
      confusion_(ConfusionMatrix::classification(nc)) {}

void ClassifyValidator::update(const at::Tensor& probs, const at::Tensor& targets) {
  if (probs.dim() != 2 || probs.size(1) != nc_ || targets.numel() != probs.size(0)) {
    throw Error("ClassifyValidator: expected probabilities [B, " + std::to_string(nc_) + "] and B classes, got " +
                c10::str(probs.sizes()) + " and " + c10::str(targets.sizes()));
  }
  const std::int64_t n5 = std::min<std::int64_t>(nc_, 5);
  const at::Tensor top = at::argsort(probs.to(at::kFloat).cpu(), 1, /*descending=*/true).slice(1, 0, n5).contiguous();
  const at::Tensor truth = targets.reshape({-1}).to(at::kLong).cpu().contiguous();
  const auto t = top.accessor<std::int64_t, 2>();
  const auto* cls = truth.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < top.size(0); ++i) {
    if (cls[i] < 0 || cls[i] >= nc_) throw Error("ClassifyValidator: class " + std::to_string(cls[i]) + " outside 0.." +
                                                std::to_string(nc_ - 1));
    ++seen_;
    ++per_class_[static_cast<std::size_t>(cls[i])];
    top1_ += t[i][0] == cls[i];
    for (std::int64_t k = 0; k < n5; ++k) top5_ += t[i][k] == cls[i];
    confusion_.process_class(t[i][0], cls[i]);
  }
}

ClassifyMetrics ClassifyValidator::finalize() const {
  if (seen_ == 0) return {};
  return {double(top1_) / double(seen_), double(top5_) / double(seen_)};
}

}  // namespace yolotrain::metrics
