#include "yolotrain/nn/anchors.hpp"

#include "yolotrain/error.hpp"

namespace yolotrain::nn {

std::pair<at::Tensor, at::Tensor> make_anchors(const std::vector<at::Tensor>& feats,
                                               const std::vector<double>& strides,
                                               double grid_cell_offset) {
  if (feats.empty() || feats.size() != strides.size()) {
    throw Error("make_anchors: got " + std::to_string(feats.size()) + " feature maps and " +
                std::to_string(strides.size()) + " strides; pass one stride per level");
  }
  const auto options = feats[0].options();
  std::vector<at::Tensor> points, stride_tensor;
  for (size_t i = 0; i < strides.size(); ++i) {
    if (feats[i].dim() != 4) {
      throw Error("make_anchors: feature map " + std::to_string(i) + " has shape " +
                  c10::str(feats[i].sizes()) + "; expected [B, C, H, W]");
    }
    const int64_t h = feats[i].size(2), w = feats[i].size(3);
    const at::Tensor sx = at::arange(w, options) + grid_cell_offset;
    const at::Tensor sy = at::arange(h, options) + grid_cell_offset;
    const auto grid = at::meshgrid({sy, sx}, "ij");
    points.push_back(at::stack({grid[1], grid[0]}, -1).view({-1, 2}));
    stride_tensor.push_back(at::full({h * w, 1}, strides[i], options));
  }
  return {at::cat(points), at::cat(stride_tensor)};
}

at::Tensor dist2rbox(const at::Tensor& distance, const at::Tensor& angle, const at::Tensor& anchor_points,
                     int64_t dim) {
  const auto lt_rb = distance.chunk(2, dim);
  const at::Tensor cos = angle.cos(), sin = angle.sin();
  const auto half = ((lt_rb[1] - lt_rb[0]) / 2).chunk(2, dim);
  const at::Tensor x = half[0] * cos - half[1] * sin, y = half[0] * sin + half[1] * cos;
  return at::cat({at::cat({x, y}, dim) + anchor_points, lt_rb[0] + lt_rb[1]}, dim);
}

at::Tensor dist2bbox(const at::Tensor& distance, const at::Tensor& anchor_points, bool xywh,
                     int64_t dim) {
  const auto lt_rb = distance.chunk(2, dim);
  const at::Tensor x1y1 = anchor_points - lt_rb[0];
  const at::Tensor x2y2 = anchor_points + lt_rb[1];
  if (xywh) return at::cat({(x1y1 + x2y2) / 2, x2y2 - x1y1}, dim);
  return at::cat({x1y1, x2y2}, dim);
}

at::Tensor bbox2dist(const at::Tensor& anchor_points, const at::Tensor& bbox, double reg_max) {
  const auto xy = bbox.chunk(2, -1);
  return at::cat({anchor_points - xy[0], xy[1] - anchor_points}, -1).clamp_(0, reg_max - 0.01);
}

}  // namespace yolotrain::nn
