// Ultralytics 8.4.117 utils/ops.py process_mask (upsample=False), utils/metrics.py mask_iou and
// models/yolo/segment/val.py SegmentationValidator._prepare_batch's label masks.
#include "yolotrain/metrics/masks.hpp"

#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/loss/segmentation_loss.hpp"

namespace yolotrain::metrics {

at::Tensor process_mask(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                        std::array<int64_t, 2> imgsz) {
  if (protos.dim() != 3 || coefficients.dim() != 2 || coefficients.size(1) != protos.size(0) ||
      boxes.size(0) != coefficients.size(0)) {
    throw Error("process_mask: prototypes [nm, h, w], coefficients [n, nm] and boxes [n, 4] disagree: " +
                c10::str(protos.sizes()) + ", " + c10::str(coefficients.sizes()) + ", " + c10::str(boxes.sizes()));
  }
  const int64_t c = protos.size(0), mh = protos.size(1), mw = protos.size(2);
  if (coefficients.size(0) == 0) return at::zeros({0, mh, mw}, protos.options().dtype(at::kByte));
  const at::Tensor masks = coefficients.matmul(protos.to(at::kFloat).view({c, -1})).view({-1, mh, mw});
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
