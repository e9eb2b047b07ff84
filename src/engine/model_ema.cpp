#include "yolotrain/engine/model_ema.hpp"

#include <torch/nn/module.h>

#include <cmath>

#include "multi_tensor.hpp"
#include "yolotrain/nn/weights.hpp"

namespace yolotrain::engine {

ModelEMA::ModelEMA(const nn::DetectionModel& model, double decay, double tau) : decay_(decay), tau_(tau) {
  ema_ = nn::DetectionModel(std::dynamic_pointer_cast<nn::DetectionModelImpl>(model->clone()));
  ema_->eval();
  for (auto& p : ema_->parameters()) p.requires_grad_(false);
}

void ModelEMA::update(const nn::DetectionModel& model) {
  torch::NoGradGuard no_grad;
  ++updates;
  const double d = decay_ * (1.0 - std::exp(-static_cast<double>(updates) / tau_));
  const auto averaged = nn::state_dict(*ema_);
  const auto current = nn::state_dict(*model);
  std::vector<at::Tensor> to, from;  // the floating-point tensors (not BatchNorm's batch counts)
  for (std::size_t i = 0; i < averaged.size(); ++i) {
    if (!averaged[i].second.is_floating_point()) continue;
    to.push_back(averaged[i].second);
    from.push_back(current[i].second);
  }
  exponential_average(to, from, d);
}

}  // namespace yolotrain::engine
