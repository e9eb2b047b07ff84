#pragma once

// Instance masks in validation, as Ultralytics 8.4.117's SegmentationValidator computes them
// (utils/ops.py process_mask, utils/metrics.py mask_iou, segment/val.py _prepare_batch).

#include <ATen/ATen.h>

#include <array>
#include <cstdint>

namespace yolotrain::metrics {

/// Ultralytics' process_mask with upsample=False (the validator's): each detection's mask at the
/// prototypes' resolution — its coefficients [n, nm] times the prototypes [nm, mh, mw], > 0 —
/// kept inside its box (boxes [n, 4] xyxy in pixels of the network input of size `imgsz` (h, w),
/// scaled to the prototypes). uint8 [n, mh, mw].
at::Tensor process_mask(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                        std::array<int64_t, 2> imgsz);

/// Ultralytics' process_mask with upsample=True (the predictor's): each detection's mask logits
/// bilinearly resized to the network input `imgsz` (h, w), > 0, kept inside its box (xyxy in input
/// pixels). uint8 [n, h, w].
at::Tensor process_mask_upsampled(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                                  std::array<int64_t, 2> imgsz);

/// Ultralytics' process_mask_native (the predictor's retina_masks): each detection's mask logits
/// scaled to the original image (scale_masks: the letterbox padding cut, bilinear), > 0, kept
/// inside its box (xyxy in original pixels). uint8 [n, orig_h, orig_w].
at::Tensor process_mask_native(const at::Tensor& protos, const at::Tensor& coefficients, const at::Tensor& boxes,
                               std::array<int64_t, 2> orig_hw);

/// Ultralytics' scale_masks (padding=true): masks [N, C, H, W] of a letterboxed input to an image of
/// `shape` (h, w): the padding the letterbox added cut away, the rest bilinearly resized. float32.
at::Tensor scale_masks(const at::Tensor& masks, std::array<int64_t, 2> shape);

/// Ultralytics' mask_iou of flattened 0/1 masks a [N, P] and b [M, P]: [N, M].
at::Tensor mask_iou(const at::Tensor& a, const at::Tensor& b, double eps = 1e-7);

/// One image's label masks for matching (_prepare_batch): from its overlap index mask [h, w]
/// (label k is `mask == k + 1`) or its own masks [nl, h, w]; resized bilinearly and thresholded at
/// 0.5 when they are not of `size` (h, w). float32 [nl, h, w].
at::Tensor label_masks(const at::Tensor& masks, int64_t nl, bool overlap, std::array<int64_t, 2> size);

}  // namespace yolotrain::metrics
