// Ultralytics 8.4.117's utils/loss.py E2ELoss: two v8DetectionLoss, their weights decaying per
// epoch (__init__, update(), decay()), combined in __call__.
#include "yolotrain/loss/e2e_loss.hpp"

#include <algorithm>
#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::loss {
namespace {

constexpr double kInitialO2m = 0.8, kFinalO2m = 0.1, kTotal = 1.0;


}  // namespace

E2ELoss::E2ELoss(DetectionLossOptions options, LossGains gains, std::int64_t epochs)
    : one2many_(options.with_topk(10, 0), gains), one2one_(options.with_topk(7, 1), gains), epochs_(epochs) {
  if (epochs < 1) throw Error("E2ELoss: epochs must be at least 1, got " + std::to_string(epochs));
}

double E2ELoss::o2m_after(std::int64_t updates, std::int64_t epochs) {
  const double x = static_cast<double>(updates);
  return std::max(1 - x / static_cast<double>(std::max<std::int64_t>(epochs - 1, 1)), 0.0) *
             (kInitialO2m - kFinalO2m) +
         kFinalO2m;
}

E2EWeights E2EWeights::at_epoch(std::int64_t epoch, std::int64_t epochs) {
  if (epoch == 0) return {kInitialO2m, kTotal - kInitialO2m};  // __init__: decay() not applied yet (same value)
  const double o2m = E2ELoss::o2m_after(epoch, epochs);
  return {o2m, std::max(kTotal - o2m, 0.0)};
}

void E2ELoss::set_epoch(std::int64_t epoch) {
  const E2EWeights w = E2EWeights::at_epoch(epoch, epochs_);
  o2m_ = w.o2m;
  o2o_ = w.o2o;
}

LossOutput E2ELoss::operator()(const std::vector<at::Tensor>& one2many, const std::vector<at::Tensor>& one2one,
                               const Targets& targets) const {
  if (one2one.empty()) {
    throw Error("E2ELoss: the one-to-one outputs are missing; an end-to-end head's training forward gives both "
                "branches (DetectionModel::forward_heads)");
  }
  const LossOutput m = one2many_(one2many, targets);
  const LossOutput o = one2one_(one2one, targets);
  return {m.total * o2m_ + o.total * o2o_, o.items};
}

}  // namespace yolotrain::loss
