// Pose label rows (Ultralytics' pose format: `class cx cy w h` + n keypoints of x y [visible]),
// checked as 8.4.117's verify_image_label checks them (ultralytics/data/utils.py, keypoint=True).
#include <sstream>

#include "box_check.hpp"

namespace yolotrain::data {

std::string detail::check_pose_row(const std::vector<double>& v, int nc, float tol, std::array<int, 2> kpt_shape,
                                   Box& box, std::vector<float>& keypoints, bool& clipped) {
  const auto [n, dims] = kpt_shape;
  const std::size_t columns = 5 + static_cast<std::size_t>(n) * static_cast<std::size_t>(dims);
  if (v.size() != columns) {
    return std::to_string(v.size()) + " columns; pose labels of kpt_shape [" + std::to_string(n) + ", " +
           std::to_string(dims) + "] require " + std::to_string(columns) + " each (class x_center y_center width " +
           "height, then " + std::to_string(n) + " keypoints of " + (dims == 3 ? "x y visible" : "x y") + ")";
  }
  keypoints.assign(static_cast<std::size_t>(n) * 3, 0.f);
  for (int k = 0; k < n; ++k) {
    const double* p = &v[5 + static_cast<std::size_t>(k) * dims];
    for (int d = 0; d < dims; ++d) {
      const auto as_written = [&] {  // only for a message: a row's every number is checked
        std::ostringstream value;
        value << p[d];
        return value.str();
      };
      if (d < 2 && p[d] > 1.01) return "keypoint " + std::to_string(k) + " at " + as_written() +
                                       ": non-normalized or out of bounds coordinates (more than 1.01)";
      if (p[d] < -0.01) return "keypoint " + std::to_string(k) + ": negative coordinate or visibility " + as_written();
    }
    float* out = &keypoints[static_cast<std::size_t>(k) * 3];
    out[0] = static_cast<float>(p[0]), out[1] = static_cast<float>(p[1]);
    out[2] = dims == 3 ? static_cast<float>(p[2]) : (p[0] < 0 || p[1] < 0 ? 0.f : 1.f);
  }
  return check_box(v.data(), nc, tol, box, clipped);
}

}  // namespace yolotrain::data
