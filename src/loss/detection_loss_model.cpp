// The model-taking constructor, apart so that the loss itself compiles against ATen alone.
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::loss {

DetectionLossOptions DetectionLossOptions::of(const nn::DetectionModel& model) {
  DetectionLossOptions o;
  o.strides = model->strides();
  o.nc = model->nc();
  o.reg_max = model->head()->options.reg_max();
  o.class_weights = model->class_weights();
  return o;
}

DetectionLoss::DetectionLoss(const nn::DetectionModel& model, LossGains gains)
    : DetectionLoss(DetectionLossOptions::of(model), gains) {}

}  // namespace yolotrain::loss
