#pragma once

#include <ATen/ATen.h>

#include <array>
#include <optional>

namespace yolotrain::metrics {

/// Pairwise IoU of xyxy boxes box1 [N, 4] and box2 [M, 4] -> [N, M] float32, as Ultralytics'
/// metrics.box_iou (eps 1e-7 added to the union).
at::Tensor box_iou(const at::Tensor& box1, const at::Tensor& box2, double eps = 1e-7);

/// How an image was letterboxed: Ultralytics' ratio_pad ((ratio_h, ratio_w), (pad_w, pad_h)).
struct RatioPad {
  std::array<double, 2> ratio = {1.0, 1.0};  ///< (h, w) gains; scale_boxes uses ratio[0] only
  std::array<double, 2> pad = {0.0, 0.0};    ///< (x, y) padding added on the left and on the top
};

/// Clamps xyxy boxes [..., 4] in place to an image of `shape` (h, w); returns `boxes`.
at::Tensor& clip_boxes(at::Tensor& boxes, std::array<int64_t, 2> shape);

/// Maps xyxy (or xywh) boxes [..., >=4] in place from the network input of `img1_shape` (h, w)
/// back to the original image of `img0_shape` (h, w): subtract the padding, divide by the gain,
/// clip (unless `clip` is false: 8.4 leaves xywh boxes unclipped, its OBBPredictor's). Without
/// `ratio_pad` the gain and the padding are recomputed as a centred letterbox
/// (Python's round-half-to-even on the padding). Returns `boxes`.
at::Tensor& scale_boxes(std::array<int64_t, 2> img1_shape, at::Tensor& boxes,
                        std::array<int64_t, 2> img0_shape,
                        const std::optional<RatioPad>& ratio_pad = std::nullopt,
                        bool padding = true, bool xywh = false, bool clip = true);

/// Ultralytics' scale_coords: points [..., >=2] (x, y first; keypoints) mapped in place as
/// scale_boxes maps boxes, then clipped to the original image. Returns `coords`.
at::Tensor& scale_coords(std::array<int64_t, 2> img1_shape, at::Tensor& coords, std::array<int64_t, 2> img0_shape,
                         const std::optional<RatioPad>& ratio_pad = std::nullopt);

}  // namespace yolotrain::metrics
