#include "step_tally.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include <cmath>
#include <limits>

namespace yolotrain::engine {

void StepTally::reset(const std::vector<double>& means, const at::Device& device) {
  const auto options = at::TensorOptions().dtype(at::kDouble);
  means_ = at::tensor(means, options).to(device);
  first_bad_loss_ = at::full({1}, std::numeric_limits<double>::infinity(), options.device(device));
  first_bad_grad_ = first_bad_loss_.clone();
}

void StepTally::add_loss(const at::Tensor& items, std::int64_t batch, std::int64_t step) {
  at::NoGradGuard no_grad;
  const at::Tensor x = items.to(at::kDouble);
  means_.mul_(double(batch)).add_(x).div_(double(batch + 1));
  note_nonfinite(first_bad_loss_, x.sum(), step);
}

void StepTally::add_grad_norm(const at::Tensor& norm, std::int64_t step) {
  at::NoGradGuard no_grad;
  note_nonfinite(first_bad_grad_, norm, step);
}

// first = min(first, step where `value` is NaN/Inf, else inf): no branch on the host.
void StepTally::note_nonfinite(at::Tensor& first, const at::Tensor& value, std::int64_t step) {
  at::minimum_out(first, first, at::where(value.isfinite(), std::numeric_limits<double>::infinity(), double(step)));
}

StepTally::Reading StepTally::read() const {
  RECORD_FUNCTION("yolotrain::cadence_read", std::vector<c10::IValue>());
  const at::Tensor host = at::cat({means_, first_bad_loss_, first_bad_grad_}).to(at::kCPU);
  const double* v = host.data_ptr<double>();
  Reading r;
  const auto n = static_cast<std::size_t>(means_.numel());
  r.means.assign(v, v + n);
  if (std::isfinite(v[n])) r.nonfinite_loss_step = static_cast<std::int64_t>(v[n]);
  if (std::isfinite(v[n + 1])) r.nonfinite_grad_step = static_cast<std::int64_t>(v[n + 1]);
  return r;
}

}  // namespace yolotrain::engine
