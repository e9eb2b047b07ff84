#include "yolotrain/data/mask_segments.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace yolotrain::data {
namespace {

using Points = std::vector<std::pair<float, float>>;

Points points_of(const std::vector<float>& xy) {
  Points p;
  for (std::size_t i = 0; i + 1 < xy.size(); i += 2) p.emplace_back(xy[i], xy[i + 1]);
  return p;
}

// Ultralytics' min_index: the first (row-major) pair of indices of the closest points.
std::pair<std::size_t, std::size_t> min_index(const Points& a, const Points& b) {
  std::pair<std::size_t, std::size_t> best{0, 0};
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < b.size(); ++j) {
      const float dx = a[i].first - b[j].first, dy = a[i].second - b[j].second;
      const double d = double(dx * dx + dy * dy);  // float32 arithmetic, as numpy on float32 arrays
      if (d < best_d) best_d = d, best = {i, j};
    }
  }
  return best;
}

// np.roll(p, -k) then the first point appended again.
Points rolled_closed(const Points& p, std::size_t k) {
  Points out(p.begin() + static_cast<long>(k), p.end());
  out.insert(out.end(), p.begin(), p.begin() + static_cast<long>(k));
  out.push_back(out.front());
  return out;
}

}  // namespace

std::vector<float> merge_multi_segment(const std::vector<std::vector<float>>& given) {
  std::vector<Points> segments;
  for (const auto& s : given) segments.push_back(points_of(s));
  const std::size_t n = segments.size();
  std::vector<std::vector<std::size_t>> idx(n);
  for (std::size_t i = 1; i < n; ++i) {
    const auto [a, b] = min_index(segments[i - 1], segments[i]);
    idx[i - 1].push_back(a);
    idx[i].push_back(b);
  }
  std::vector<Points> pieces;
  for (std::size_t i = 0; i < n; ++i) {  // forward: each segment rolled to its entry point
    std::vector<std::size_t> id = idx[i];
    if (id.size() == 2 && id[0] > id[1]) {
      std::reverse(id.begin(), id.end());
      std::reverse(segments[i].begin(), segments[i].end());
    }
    segments[i] = rolled_closed(segments[i], id.empty() ? 0 : id[0]);
    if (i == 0 || i == n - 1) {
      pieces.push_back(segments[i]);
    } else {
      const std::size_t end = id[1] - id[0];
      pieces.emplace_back(segments[i].begin(), segments[i].begin() + static_cast<long>(end + 1));
    }
  }
  for (std::size_t i = n; i-- > 0;) {  // backward: the middle segments' other halves
    if (i == 0 || i == n - 1) continue;
    const std::size_t from = idx[i][1] > idx[i][0] ? idx[i][1] - idx[i][0] : idx[i][0] - idx[i][1];
    pieces.emplace_back(segments[i].begin() + static_cast<long>(from), segments[i].end());
  }
  std::vector<float> out;
  for (const auto& piece : pieces) {
    for (const auto& [x, y] : piece) out.push_back(x), out.push_back(y);
  }
  return out;
}

std::vector<float> mask_to_segment(const std::uint8_t* mask, int height, int width) {
  cv::Mat m(height, width, CV_8UC1, const_cast<std::uint8_t*>(mask));
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(m.clone(), contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
  std::vector<std::vector<float>> segments;
  for (const auto& c : contours) {
    std::vector<float> xy;
    for (const auto& p : c) xy.push_back(float(p.x)), xy.push_back(float(p.y));
    segments.push_back(std::move(xy));
  }
  if (segments.empty()) return {};
  return segments.size() == 1 ? segments.front() : merge_multi_segment(segments);
}

}  // namespace yolotrain::data
