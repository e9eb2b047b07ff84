// Ultralytics 8.4.117 utils/ops.py xyxyxyxy2xywhr (one row) and xywhr2xyxyxyxy.
#include "yolotrain/data/rotated_boxes.hpp"

#include <opencv2/imgproc.hpp>

#include <cmath>
#include <utility>

namespace yolotrain::data {

std::array<float, 5> outline_xywhr(const std::vector<float>& xy) {
  if (xy.size() < 2) return {0, 0, 0, 0, 0};
  std::vector<cv::Point2f> points;  // float32, as the numpy array Ultralytics hands to cv2
  for (std::size_t i = 0; i + 1 < xy.size(); i += 2) points.emplace_back(xy[i], xy[i + 1]);
  const cv::RotatedRect r = cv::minAreaRect(points);
  // Python floats (double) from here, as Ultralytics' loop; float32 at the end (torch.tensor).
  double w = r.size.width, h = r.size.height, theta = double(r.angle) / 180 * M_PI;
  if (w < h) {
    std::swap(w, h);
    theta += M_PI / 2;
  }
  while (theta >= 3 * M_PI / 4) theta -= M_PI;
  while (theta < -M_PI / 4) theta += M_PI;
  return {r.center.x, r.center.y, static_cast<float>(w), static_cast<float>(h), static_cast<float>(theta)};
}

std::array<float, 8> xywhr_corners(const std::array<float, 5>& b) {
  const float c = std::cos(b[4]), s = std::sin(b[4]);
  const float v1x = b[2] / 2 * c, v1y = b[2] / 2 * s, v2x = -b[3] / 2 * s, v2y = b[3] / 2 * c;
  return {b[0] + v1x + v2x, b[1] + v1y + v2y, b[0] + v1x - v2x, b[1] + v1y - v2y,
          b[0] - v1x - v2x, b[1] - v1y - v2y, b[0] - v1x + v2x, b[1] - v1y + v2y};
}

}  // namespace yolotrain::data
