#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "yolotrain/loss/detection_loss.hpp"

namespace yolotrain::loss {

/// The weights of an end-to-end head's two branch losses at an epoch: Ultralytics' E2ELoss o2m
/// and o2o after `epoch` update()s of a run of `epochs` (ProgLoss, below).
struct E2EWeights {
  double o2m = 0.8;
  double o2o = 1.0 - 0.8;
  static E2EWeights at_epoch(std::int64_t epoch, std::int64_t epochs);
};

/// Ultralytics 8.4's E2ELoss, the loss of an end-to-end head (YOLO26): the v8 detection loss of
/// the one-to-many branch (assigner topk 10) and of the one-to-one branch (topk 7, topk2 1),
/// weighted o2m and o2o = 1 - o2m. o2m starts at 0.8 and falls linearly to 0.1 over the run's
/// epochs (ProgLoss): after `u` epochs, max(1 - u / max(epochs - 1, 1), 0) * 0.7 + 0.1. Ultralytics
/// calls update() once per finished epoch and, on resume, sets updates = start_epoch; the weight
/// is therefore a function of the epoch alone, and set_epoch(e) restores it at any step of epoch
/// e (a mid-epoch resume included). The reported items are the one-to-one branch's.
class E2ELoss {
 public:
  /// `options`: the head's (strides, nc, reg_max; stal as the recipe says — 8.4: on); its
  /// tal_topk / tal_topk2 are replaced by each branch's. `epochs`: the run's.
  E2ELoss(DetectionLossOptions options, LossGains gains, std::int64_t epochs);

  /// The weights of epoch `epoch` (0-based): Ultralytics' after `epoch` update()s.
  void set_epoch(std::int64_t epoch);
  /// Ultralytics' E2ELoss.decay(updates): the one-to-many weight after `updates` epochs.
  static double o2m_after(std::int64_t updates, std::int64_t epochs);

  double o2m() const { return o2m_; }
  double o2o() const { return o2o_; }

  /// one2many / one2one: each branch's raw outputs per level ([B, 4*reg_max + nc, H_i, W_i]).
  /// total = one2many's total * o2m + one2one's * o2o; items: the one-to-one's.
  LossOutput operator()(const std::vector<at::Tensor>& one2many, const std::vector<at::Tensor>& one2one,
                        const Targets& targets) const;

  const DetectionLoss& one2many() const { return one2many_; }
  const DetectionLoss& one2one() const { return one2one_; }

 private:
  DetectionLoss one2many_;
  DetectionLoss one2one_;
  std::int64_t epochs_;
  double o2m_ = 0.8;
  double o2o_ = 1.0 - 0.8;
};

}  // namespace yolotrain::loss
