#pragma once

// Instance masks from polygons, as Ultralytics' data/utils.py builds them for segmentation training
// (polygon2mask, polygons2masks, polygons2masks_overlap) and Format._format_segments / apply_instances
// the semantic map of YOLO26-seg (sem_masks).

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace yolotrain::data {

/// One image's polygons in pixels of the (h, w) image: x1 y1 x2 y2 ... per instance.
using Polygons = std::vector<std::vector<float>>;

/// Ultralytics' polygon2mask: the polygon's points truncated to integers (np.int32), filled with
/// OpenCV's fillPoly at (h, w), then resized by 1 / downsample_ratio with cv2.resize's bilinear
/// rule: uint8 [h / ratio, w / ratio] holding 0 or `color`.
at::Tensor polygon_to_mask(int64_t h, int64_t w, const std::vector<float>& polygon, int64_t downsample_ratio = 1,
                           std::uint8_t color = 1);

/// Ultralytics' polygons2masks: one 0/1 mask per polygon, uint8 [N, h / ratio, w / ratio].
at::Tensor polygons_to_masks(int64_t h, int64_t w, const Polygons& polygons, int64_t downsample_ratio = 1);

/// What polygons_to_overlap_mask gives: the index mask and the instance order it uses.
struct OverlapMask {
  /// [h / ratio, w / ratio]: 0 background, k the k-th instance of `order` (1-based); uint8, or
  /// int32 for more than 255 instances (as Ultralytics).
  at::Tensor mask;
  /// The instances by decreasing mask area (Ultralytics' argsort(-areas)); a pixel covered by
  /// several holds the smallest's index. Ultralytics reorders the boxes and classes by it.
  std::vector<int64_t> order;
};

/// Ultralytics' polygons2masks_overlap (overlap_mask=True, the default).
OverlapMask polygons_to_overlap_mask(int64_t h, int64_t w, const Polygons& polygons, int64_t downsample_ratio = 1);

/// YOLO26-seg's semantic target with overlap masks: cls[mask - 1] per pixel (float32), `cls` in
/// the overlap order. As Ultralytics, a background pixel (0) reads cls[-1]; the loss counts only
/// pixels some instance covers.
at::Tensor semantic_from_overlap(const at::Tensor& mask, const at::Tensor& cls);

/// The same from one mask per instance (overlap_mask=False): a pixel takes the class of the
/// smallest instance covering it (Format.apply_instances), 0 where none does.
at::Tensor semantic_from_masks(const at::Tensor& masks, const at::Tensor& cls);

}  // namespace yolotrain::data
