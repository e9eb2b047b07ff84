// Ultralytics 8.4.117 data/utils.py polygon2mask / polygons2masks / polygons2masks_overlap and
// augment.py Format.apply_instances' sem_masks, with the same OpenCV calls (fillPoly, resize).
#include "yolotrain/data/masks.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <numeric>
#include <string>

#include "yolotrain/error.hpp"

namespace yolotrain::data {
namespace {

void check_size(int64_t h, int64_t w, int64_t ratio) {
  if (h < 1 || w < 1 || ratio < 1 || ratio > std::min(h, w)) {
    throw Error("masks: an image of " + std::to_string(h) + "x" + std::to_string(w) + " cannot be downsampled by " +
                std::to_string(ratio) + " (mask_ratio must be 1 to the image's smaller side)");
  }
}

cv::Mat fill(int64_t h, int64_t w, const std::vector<float>& polygon, std::uint8_t color) {
  if (polygon.size() % 2 != 0)
    throw Error("masks: a polygon needs x y pairs, got " + std::to_string(polygon.size()) + " values");
  cv::Mat mask = cv::Mat::zeros(static_cast<int>(h), static_cast<int>(w), CV_8UC1);
  std::vector<cv::Point> points;
  for (size_t i = 0; i < polygon.size(); i += 2) {  // np.asarray(..., dtype=np.int32): truncation
    points.emplace_back(static_cast<int>(polygon[i]), static_cast<int>(polygon[i + 1]));
  }
  const std::vector<std::vector<cv::Point>> polys{points};
  cv::fillPoly(mask, polys, cv::Scalar(color));
  return mask;
}

at::Tensor to_tensor(const cv::Mat& m) {
  return at::from_blob(m.data, {m.rows, m.cols}, at::kByte).clone();
}

}  // namespace

at::Tensor polygon_to_mask(int64_t h, int64_t w, const std::vector<float>& polygon, int64_t ratio, std::uint8_t color) {
  check_size(h, w, ratio);
  const cv::Mat full = fill(h, w, polygon, color);
  cv::Mat small;
  cv::resize(full, small, cv::Size(static_cast<int>(w / ratio), static_cast<int>(h / ratio)));  // INTER_LINEAR
  return to_tensor(small);
}

at::Tensor polygons_to_masks(int64_t h, int64_t w, const Polygons& polygons, int64_t ratio) {
  check_size(h, w, ratio);
  if (polygons.empty()) return at::zeros({0, h / ratio, w / ratio}, at::kByte);
  std::vector<at::Tensor> masks;
  for (const auto& p : polygons) masks.push_back(polygon_to_mask(h, w, p, ratio));
  return at::stack(masks);
}

OverlapMask polygons_to_overlap_mask(int64_t h, int64_t w, const Polygons& polygons, int64_t ratio) {
  check_size(h, w, ratio);
  const bool wide = polygons.size() > 255;
  OverlapMask out;
  out.mask = at::zeros({h / ratio, w / ratio}, wide ? at::kInt : at::kByte);
  if (polygons.empty()) return out;
  const at::Tensor masks = polygons_to_masks(h, w, polygons, ratio);
  const at::Tensor areas = masks.sum({1, 2}, false, at::kLong);
  out.order.resize(polygons.size());
  std::iota(out.order.begin(), out.order.end(), 0);
  // argsort(-areas): numpy's sort of a few values is an insertion sort, stable on ties.
  const auto* a = areas.data_ptr<int64_t>();
  std::stable_sort(out.order.begin(), out.order.end(), [&](int64_t i, int64_t j) { return a[i] > a[j]; });
  at::Tensor acc = out.mask.to(at::kInt);
  for (size_t k = 0; k < out.order.size(); ++k) {  // the running max: smaller instances on top
    acc = at::maximum(acc, masks[out.order[k]].to(at::kInt) * static_cast<int>(k + 1));
  }
  out.mask = acc.to(out.mask.scalar_type());
  return out;
}

at::Tensor semantic_from_overlap(const at::Tensor& mask, const at::Tensor& cls) {
  if (cls.numel() == 0) return at::zeros(mask.sizes(), at::kFloat);
  at::Tensor index = mask.to(at::kLong) - 1;
  index = at::where(index < 0, index + cls.numel(), index);  // Python's cls[-1]
  return cls.reshape({-1}).to(at::kFloat).index({index});
}

at::Tensor semantic_from_masks(const at::Tensor& masks, const at::Tensor& cls) {
  if (cls.numel() == 0 || masks.size(0) == 0) return at::zeros({masks.size(-2), masks.size(-1)}, at::kFloat);
  const at::Tensor m = masks.to(at::kFloat), c = cls.reshape({-1}).to(at::kFloat);
  at::Tensor sem = std::get<0>((m * c.view({-1, 1, 1})).max(0));
  const at::Tensor over = m.sum(0) > 1;
  if (over.any().item<bool>()) {  // the smallest instance covering the pixel
    const at::Tensor weights = m.sum({1, 2});
    at::Tensor weighted = m * weights.view({-1, 1, 1});
    weighted.masked_fill_(m == 0, weights.max().item<float>() + 1);
    const at::Tensor smallest = weighted.argmin(0);
    sem = at::where(over, c.index({smallest}), sem);
  }
  return sem;
}

}  // namespace yolotrain::data
