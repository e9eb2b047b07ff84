#pragma once
// A segmentation model's detections of one image with their masks and outlines, as Ultralytics
// 8.4.117's SegmentationPredictor.construct_result and Results.masks (.data, .xy) give them.
#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <vector>

namespace yolotrain::predict::detail {

struct InstanceMasks {
  at::Tensor detections;  ///< [n, 6] x1 y1 x2 y2 conf cls in the original image's pixels
  std::vector<std::vector<std::uint8_t>> bitmaps;  ///< per detection, orig_h * orig_w 0/1
  std::vector<std::vector<float>> polygons;        ///< per detection, x y pairs in original pixels
};

/// `det` [n, 6 + nm] (post-NMS rows in input pixels with their mask coefficients) and the image's
/// prototypes [nm, mh, mw]: the masks at the input size (process_mask, upsample=True) or, with
/// `retina`, at the original size (process_mask_native); detections whose mask is empty dropped;
/// each outline by masks2segments then scale_coords; each bitmap scaled to the original size.
InstanceMasks instance_masks(const at::Tensor& det, const at::Tensor& proto, std::array<std::int64_t, 2> input,
                             std::array<std::int64_t, 2> orig, bool retina);

}  // namespace yolotrain::predict::detail
