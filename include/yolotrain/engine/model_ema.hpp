#pragma once

#include <cstdint>

#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::engine {

/// Ultralytics' ModelEMA: an exponential moving average of every floating-point entry of the
/// model's state dict (parameters and BatchNorm statistics), with decay
/// d = 0.9999 * (1 - exp(-updates / 2000)). Validation, best and last use these weights.
class ModelEMA {
 public:
  explicit ModelEMA(const nn::DetectionModel& model, double decay = 0.9999, double tau = 2000);
  /// One update after an optimizer step.
  void update(const nn::DetectionModel& model);
  /// The averaged model (eval mode, no gradients).
  nn::DetectionModel& ema() { return ema_; }
  const nn::DetectionModel& ema() const { return ema_; }
  std::int64_t updates = 0;

 private:
  nn::DetectionModel ema_{nullptr};
  double decay_, tau_;
};

}  // namespace yolotrain::engine
