// The model-taking constructor, apart so that the loss itself compiles against ATen alone.
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::loss {

DetectionLoss::DetectionLoss(const nn::DetectionModel& model, LossGains gains)
    : DetectionLoss(DetectionLossOptions{model->strides(), model->nc(), model->head()->options.reg_max(), 10},
                    gains) {}

}  // namespace yolotrain::loss
