// Ultralytics 8.4's class weights (cls_pw): models/yolo/detect/train.py get_class_counts,
// compute_class_weights and set_class_weights; the loss multiplies each class's BCE by its weight
// (utils/loss.py v8DetectionLoss and v8OBBLoss: `bce_loss *= self.class_weights`).
#include <string>

#include "loss_inputs.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/loss/detection_loss.hpp"

namespace yolotrain::loss {

at::Tensor class_weights_for(const std::vector<int64_t>& class_counts, double power) {
  if (!(power >= 0.0 && power <= 1.0)) {
    throw Error("cls_pw=" + std::to_string(power) + " is outside [0, 1] (0: every class weighs the same, 1: the "
                "inverse of its frequency)");
  }
  bool counted = false;
  for (const int64_t c : class_counts) counted = counted || c != 0;
  if (power == 0.0 || !counted) return {};
  // numpy's float32 all through: counts (0 -> 1), (1 / counts) ** power, / mean.
  at::Tensor counts = at::tensor(class_counts, at::kLong).to(at::kFloat);
  counts = at::where(counts == 0, at::ones_like(counts), counts);
  const at::Tensor w = at::pow(at::reciprocal(counts), power);
  return w / w.mean();
}

namespace detail {

at::Tensor class_weights(const DetectionLossOptions& o, const at::Tensor& scores) {
  if (!o.class_weights.defined()) return {};
  return o.class_weights.to(scores.options()).view({1, 1, -1});
}

}  // namespace detail
}  // namespace yolotrain::loss
