// Ultralytics 8.4.117's utils/loss.py E2ELoss: two v8DetectionLoss, their weights decaying per
// epoch (__init__, update(), decay()), combined in __call__.
#include "yolotrain/loss/e2e_loss.hpp"

#include <algorithm>
#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::loss {
namespace {

constexpr double kInitialO2m = 0.8, kFinalO2m = 0.1, kTotal = 1.0;

DetectionLossOptions with_topk(DetectionLossOptions o, std::int64_t topk, std::int64_t topk2) {
  o.tal_topk = topk;
  o.tal_topk2 = topk2;
  return o;
}

}  // namespace

E2ELoss::E2ELoss(DetectionLossOptions options, LossGains gains, std::int64_t epochs)
    : one2many_(with_topk(options, 10, 0), gains), one2one_(with_topk(options, 7, 1), gains), epochs_(epochs) {
  if (epochs < 1) throw Error("E2ELoss: epochs must be at least 1, got " + std::to_string(epochs));
}

double E2ELoss::o2m_after(std::int64_t updates, std::int64_t epochs) {
  const double x = static_cast<double>(updates);
  return std::max(1 - x / static_cast<double>(std::max<std::int64_t>(epochs - 1, 1)), 0.0) *
             (kInitialO2m - kFinalO2m) +
         kFinalO2m;
}

void E2ELoss::set_epoch(std::int64_t epoch) {
  if (epoch == 0) {  // __init__: o2o = total - o2m, decay() not applied yet (same value)
    o2m_ = kInitialO2m;
    o2o_ = kTotal - kInitialO2m;
    return;
  }
  o2m_ = o2m_after(epoch, epochs_);
  o2o_ = std::max(kTotal - o2m_, 0.0);
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
