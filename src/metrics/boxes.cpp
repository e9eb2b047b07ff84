#include "yolotrain/metrics/boxes.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::metrics {

at::Tensor box_iou(const at::Tensor& box1, const at::Tensor& box2, double eps) {
  if (box1.dim() != 2 || box1.size(1) != 4 || box2.dim() != 2 || box2.size(1) != 4) {
    throw Error("box_iou: expected xyxy boxes [N, 4] and [M, 4], got " + c10::str(box1.sizes()) +
                " and " + c10::str(box2.sizes()));
  }
  const auto a = box1.to(at::kFloat).unsqueeze(1).chunk(2, 2);
  const auto b = box2.to(at::kFloat).unsqueeze(0).chunk(2, 2);
  const at::Tensor inter = (at::min(a[1], b[1]) - at::max(a[0], b[0])).clamp_(0).prod(2);
  return inter / ((a[1] - a[0]).prod(2) + (b[1] - b[0]).prod(2) - inter + eps);
}

at::Tensor& clip_boxes(at::Tensor& boxes, std::array<int64_t, 2> shape) {
  for (int64_t k = 0; k < 4; ++k) {
    at::Tensor c = boxes.select(-1, k);
    c.clamp_(0, static_cast<double>(shape[k % 2 == 0 ? 1 : 0]));
  }
  return boxes;
}

namespace {

struct Letterbox {
  double gain = 0, pad_x = 0, pad_y = 0;
};

// The letterbox from img0 to img1: ratio_pad's, else a centred one recomputed from the shapes.
Letterbox letterbox_of(std::array<int64_t, 2> img1_shape, std::array<int64_t, 2> img0_shape,
                       const std::optional<RatioPad>& ratio_pad, const char* who) {
  double gain = 0, pad_x = 0, pad_y = 0;
  if (ratio_pad) {
    gain = ratio_pad->ratio[0];
    pad_x = ratio_pad->pad[0];
    pad_y = ratio_pad->pad[1];
  } else {
    if (img0_shape[0] <= 0 || img0_shape[1] <= 0) {
      throw Error(std::string(who) + ": the original image shape must be positive, got (" +
                  std::to_string(img0_shape[0]) + ", " + std::to_string(img0_shape[1]) + ")");
    }
    const double h1 = static_cast<double>(img1_shape[0]), w1 = static_cast<double>(img1_shape[1]);
    const double h0 = static_cast<double>(img0_shape[0]), w0 = static_cast<double>(img0_shape[1]);
    gain = std::min(h1 / h0, w1 / w0);
    pad_x = std::nearbyint((w1 - w0 * gain) / 2 - 0.1);  // Python round: half to even
    pad_y = std::nearbyint((h1 - h0 * gain) / 2 - 0.1);
  }
  if (gain <= 0) throw Error(std::string(who) + ": the letterbox gain must be positive");
  return {gain, pad_x, pad_y};
}

}  // namespace

at::Tensor& scale_boxes(std::array<int64_t, 2> img1_shape, at::Tensor& boxes,
                        std::array<int64_t, 2> img0_shape, const std::optional<RatioPad>& ratio_pad,
                        bool padding, bool xywh, bool clip) {
  if (boxes.dim() < 1 || boxes.size(-1) < 4) {
    throw Error("scale_boxes: boxes must be [..., 4] (or wider), got " + c10::str(boxes.sizes()));
  }
  const auto [gain, pad_x, pad_y] = letterbox_of(img1_shape, img0_shape, ratio_pad, "scale_boxes");
  if (padding) {
    boxes.select(-1, 0).sub_(pad_x);
    boxes.select(-1, 1).sub_(pad_y);
    if (!xywh) {
      boxes.select(-1, 2).sub_(pad_x);
      boxes.select(-1, 3).sub_(pad_y);
    }
  }
  boxes.slice(-1, 0, 4).div_(gain);
  return clip ? clip_boxes(boxes, img0_shape) : boxes;
}

at::Tensor& scale_coords(std::array<int64_t, 2> img1_shape, at::Tensor& coords, std::array<int64_t, 2> img0_shape,
                         const std::optional<RatioPad>& ratio_pad) {
  if (coords.dim() < 1 || coords.size(-1) < 2) {
    throw Error("scale_coords: points must be [..., 2] (or wider), got " + c10::str(coords.sizes()));
  }
  const auto [gain, pad_x, pad_y] = letterbox_of(img1_shape, img0_shape, ratio_pad, "scale_coords");
  at::Tensor x = coords.select(-1, 0), y = coords.select(-1, 1);
  x.sub_(pad_x).div_(gain).clamp_(0, static_cast<double>(img0_shape[1]));
  y.sub_(pad_y).div_(gain).clamp_(0, static_cast<double>(img0_shape[0]));
  return coords;
}

}  // namespace yolotrain::metrics
