// Ultralytics 8.4.117's CopyPaste (data/augment.py): mode "flip" (after mosaic, before
// random_perspective, as its v8_transforms inserts it) and mode "mixup" (after random_perspective,
// pasting from another sample built the same way); bbox_ioa from utils/metrics.py.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "augment_into.hpp"
#include "opencv_view.hpp"
#include "yolotrain/data/augment.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::data {
namespace {

// Instances.fliplr on xyxy pixel boxes and their outlines.
PixelBox mirrored(const PixelBox& b, float w) {
  PixelBox f = b;
  f.x1 = w - b.x2;
  f.x2 = w - b.x1;
  for (std::size_t i = 0; i < f.segment.size(); i += 2) f.segment[i] = w - f.segment[i];
  return f;
}

}  // namespace

float detail::bbox_ioa(const PixelBox& a, const PixelBox& b) {
  const float iw = std::max(std::min(a.x2, b.x2) - std::max(a.x1, b.x1), 0.0F);
  const float ih = std::max(std::min(a.y2, b.y2) - std::max(a.y1, b.y1), 0.0F);
  return iw * ih / ((b.x2 - b.x1) * (b.y2 - b.y1) + 1e-7F);
}

void copy_paste(Labelled& s, double p, const Labelled* source) {
  const bool outlines = has_outlines(s.boxes);
  if (p <= 0 || !outlines) return;
  if (source && (source->image.height != s.image.height || source->image.width != s.image.width)) {
    throw Error("copy_paste: the source image is " + std::to_string(source->image.height) + "x" +
                std::to_string(source->image.width) + ", the sample " + std::to_string(s.image.height) + "x" +
                std::to_string(s.image.width));
  }
  const float w = static_cast<float>(s.image.width);
  std::vector<PixelBox> flipped;  // the instances to paste from: mirrored ones, or the source's
  if (source) flipped = source->boxes;
  else for (const auto& b : s.boxes) flipped.push_back(mirrored(b, w));
  std::vector<std::size_t> candidates;  // mirrored instances covering < 30 % of every box
  std::vector<float> most;              // each one's largest cover
  for (std::size_t j = 0; j < flipped.size(); ++j) {
    float m = 0;
    bool apart = true;
    for (const auto& b : s.boxes) {
      const float v = detail::bbox_ioa(flipped[j], b);
      apart = apart && v < 0.30F;
      m = std::max(m, v);
    }
    if (apart) candidates.push_back(j), most.push_back(m);
  }
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return most[a] < most[b]; });
  const auto take = static_cast<std::size_t>(std::nearbyint(p * static_cast<double>(candidates.size())));
  if (take == 0) return;
  cv::Mat mask = cv::Mat::zeros(s.image.height, s.image.width, CV_8UC1);
  std::vector<PixelBox> pasted;
  for (std::size_t k = 0; k < take; ++k) {
    const PixelBox& f = flipped[candidates[order[k]]];
    std::vector<std::vector<cv::Point>> contour(1);
    for (std::size_t i = 0; i + 1 < f.segment.size(); i += 2) {  // astype(np.int32): truncation
      contour[0].emplace_back(static_cast<int>(f.segment[i]), static_cast<int>(f.segment[i + 1]));
    }
    cv::drawContours(mask, contour, -1, cv::Scalar(1), cv::FILLED);
    pasted.push_back(f);
  }
  cv::Mat image = detail::view(s.image), mirror;
  if (source) mirror = detail::view(source->image);
  else cv::flip(image, mirror, 1);
  mirror.copyTo(image, mask);
  s.boxes.insert(s.boxes.end(), pasted.begin(), pasted.end());
}

}  // namespace yolotrain::data
