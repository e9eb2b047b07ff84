#include "instance_masks.hpp"

#include <algorithm>
#include <cmath>

#include "yolotrain/data/mask_segments.hpp"
#include "yolotrain/metrics/boxes.hpp"
#include "yolotrain/metrics/masks.hpp"

namespace yolotrain::predict::detail {
namespace {

// Ultralytics' scale_coords (padding, no normalize) of x y pairs from a `from` (h, w) letterboxed
// image to the `to` image, clipped to it; numpy's float32 arithmetic.
void scale_coords(std::vector<float>& xy, std::array<std::int64_t, 2> from, std::array<std::int64_t, 2> to) {
  const double gain = std::min(double(from[0]) / double(to[0]), double(from[1]) / double(to[1]));
  const double pad_x = std::nearbyint((double(from[1]) - std::nearbyint(double(to[1]) * gain)) / 2 - 0.1);
  const double pad_y = std::nearbyint((double(from[0]) - std::nearbyint(double(to[0]) * gain)) / 2 - 0.1);
  const auto g = static_cast<float>(gain);
  for (std::size_t i = 0; i + 1 < xy.size(); i += 2) {
    const float x = (xy[i] - static_cast<float>(pad_x)) / g, y = (xy[i + 1] - static_cast<float>(pad_y)) / g;
    xy[i] = std::clamp(x, 0.0F, static_cast<float>(to[1]));
    xy[i + 1] = std::clamp(y, 0.0F, static_cast<float>(to[0]));
  }
}

}  // namespace

InstanceMasks instance_masks(const at::Tensor& det, const at::Tensor& proto, std::array<std::int64_t, 2> input,
                             std::array<std::int64_t, 2> orig, bool retina) {
  at::Tensor boxes = det.slice(1, 0, 4).clone();
  const at::Tensor coefficients = det.slice(1, 6);
  at::Tensor masks;
  if (retina) {
    metrics::scale_boxes(input, boxes, orig);
    masks = metrics::process_mask_native(proto, coefficients, boxes, orig);
  } else {
    masks = metrics::process_mask_upsampled(proto, coefficients, boxes, input);
    metrics::scale_boxes(input, boxes, orig);
  }
  InstanceMasks out;
  const at::Tensor keep = det.size(0) ? masks.flatten(1).amax(1).gt(0) : at::zeros({0}, at::kBool);
  out.detections = at::cat({boxes, det.slice(1, 4, 6)}, 1).index({keep}).contiguous();
  masks = masks.index({keep}).contiguous();
  const at::Tensor bitmaps =
      retina || masks.size(0) == 0
          ? masks
          : metrics::scale_masks(masks.unsqueeze(0), orig)[0].gt(0.5).to(at::kByte).contiguous();
  const std::array<std::int64_t, 2> mask_hw{masks.size(1), masks.size(2)};
  for (std::int64_t k = 0; k < masks.size(0); ++k) {
    std::vector<float> polygon = data::mask_to_segment(masks[k].data_ptr<std::uint8_t>(), static_cast<int>(mask_hw[0]),
                                                       static_cast<int>(mask_hw[1]));
    scale_coords(polygon, mask_hw, orig);
    out.polygons.push_back(std::move(polygon));
    const std::uint8_t* b = bitmaps[k].data_ptr<std::uint8_t>();
    out.bitmaps.emplace_back(b, b + orig[0] * orig[1]);
  }
  return out;
}

}  // namespace yolotrain::predict::detail
