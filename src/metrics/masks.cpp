// Ultralytics 8.4.117 utils/ops.py process_mask, process_mask_native, scale_masks, utils/metrics.py mask_iou and
// models/yolo/segment/val.py SegmentationValidator._prepare_batch's label masks.
#include "yolotrain/metrics/masks.hpp"

#include <cmath>
#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/segmentation_loss.hpp"

namespace yolotrain::metrics {

namespace {

void check_mask_inputs(const char* what, const at::Tensor& protos, const at::Tensor& coefficients,
                       const at::Tensor& boxes) {
  if (protos.dim() != 3 || coefficients.dim() != 2 || coefficients.size(1) != protos.size(0) ||
      boxes.size(0) != coefficients.size(0)) {
    throw Error(std::string(what) + ": prototypes [nm, h, w], coefficients [n, nm] and boxes [n, 4] disagree: " +
                c10::str(protos.sizes()) + ", " + c10::str(coefficients.sizes()) + ", " + c10::str(boxes.sizes()));
  }
}

// The detections' mask logits at the prototypes' resolution: coefficients @ prototypes, [n, mh, mw].
at::Tensor mask_logits(const at::Tensor& protos, const at::Tensor& coefficients) {
  const int64_t c = protos.size(0), mh = protos.size(1), mw = protos.size(2);
  return coefficients.to(at::kFloat).matmul(protos.to(at::kFloat).view({c, -1})).view({-1, mh, mw});
}

// Python's round() (half to even) of a double, as scale_masks computes its crop.
int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

}  // namespace

at::Tensor process_mask_upsampled(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                                  std::array<int64_t, 2> imgsz) {
  check_mask_inputs("process_mask", protos, coefficients, boxes);
  if (coefficients.size(0) == 0) return at::zeros({0, imgsz[0], imgsz[1]}, protos.options().dtype(at::kByte));
  const at::Tensor up = at::upsample_bilinear2d(mask_logits(protos, coefficients).unsqueeze(0), {imgsz[0], imgsz[1]},
                                                false)[0];
  return loss::crop_mask(up.gt(0.0).to(at::kByte), boxes.to(at::kFloat));
}

at::Tensor scale_masks(const at::Tensor& masks, std::array<int64_t, 2> shape) {
  const int64_t h1 = masks.size(2), w1 = masks.size(3);
  if (h1 == shape[0] && w1 == shape[1]) return masks.to(at::kFloat);
  const double gain = std::min(double(h1) / double(shape[0]), double(w1) / double(shape[1]));
  const double pad_w = double(w1 - py_round(double(shape[1]) * gain)) / 2;
  const double pad_h = double(h1 - py_round(double(shape[0]) * gain)) / 2;
  const int64_t top = py_round(pad_h - 0.1), left = py_round(pad_w - 0.1);
  const int64_t bottom = h1 - py_round(pad_h + 0.1), right = w1 - py_round(pad_w + 0.1);
  const at::Tensor cut = masks.slice(2, top, bottom).slice(3, left, right).to(at::kFloat);
  return at::upsample_bilinear2d(cut, {shape[0], shape[1]}, false);
}

at::Tensor process_mask_native(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                               std::array<int64_t, 2> orig_hw) {
  check_mask_inputs("process_mask_native", protos, coefficients, boxes);
  if (coefficients.size(0) == 0) return at::zeros({0, orig_hw[0], orig_hw[1]}, protos.options().dtype(at::kByte));
  // Ultralytics upsamples in chunks of at most 32M pixels (memory); the values are the same.
  const at::Tensor logits = mask_logits(protos, coefficients);
  const int64_t step = std::max<int64_t>(1, 32000000 / (orig_hw[0] * orig_hw[1]));
  std::vector<at::Tensor> chunks;
  for (int64_t i = 0; i < logits.size(0); i += step) {
    chunks.push_back(scale_masks(logits.slice(0, i, i + step).unsqueeze(0), orig_hw)[0].gt(0.0).to(at::kByte));
  }
  return loss::crop_mask(at::cat(chunks), boxes.to(at::kFloat));
}

at::Tensor process_mask(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                        std::array<int64_t, 2> imgsz) {
  check_mask_inputs("process_mask", protos, coefficients, boxes);
  const int64_t mh = protos.size(1), mw = protos.size(2);
  if (coefficients.size(0) == 0) return at::zeros({0, mh, mw}, protos.options().dtype(at::kByte));
  const at::Tensor masks = mask_logits(protos, coefficients);
  const double wr = static_cast<double>(mw) / static_cast<double>(imgsz[1]);
  const double hr = static_cast<double>(mh) / static_cast<double>(imgsz[0]);
  const at::Tensor scaled = boxes * at::tensor({wr, hr, wr, hr}, boxes.options().dtype(at::kFloat)).view({1, 4});
  return loss::crop_mask(masks.gt(0.0).to(at::kByte), scaled);
}

at::Tensor mask_iou(const at::Tensor& a, const at::Tensor& b, double eps) {
  const at::Tensor intersection = a.matmul(b.t()).clamp_min(0);
  const at::Tensor uni = a.sum(1).unsqueeze(1) + b.sum(1).unsqueeze(0) - intersection;
  return intersection / (uni + eps);
}

at::Tensor label_masks(const at::Tensor& masks, int64_t nl, bool overlap, std::array<int64_t, 2> size) {
  at::Tensor m;
  if (overlap) {
    const at::Tensor index = at::arange(1, nl + 1, masks.options().dtype(at::kFloat)).view({nl, 1, 1});
    m = (masks.to(at::kFloat).unsqueeze(0) == index).to(at::kFloat);
  } else {
    m = masks.to(at::kFloat);
  }
  if (nl && (m.size(1) != size[0] || m.size(2) != size[1])) {
    m = at::upsample_bilinear2d(m.unsqueeze(0), {size[0], size[1]}, false)[0].gt(0.5).to(at::kFloat);
  }
  return m;
}

}  // namespace yolotrain::metrics
