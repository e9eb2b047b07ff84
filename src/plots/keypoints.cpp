// Keypoints and limbs as Ultralytics 8.4.117's Annotator draws them (utils/plotting.py: kpts, the
// pose_palette, skeleton, limb_color and kpt_color of Annotator.__init__).
#include "yolotrain/plots/keypoints.hpp"

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include <array>
#include <cmath>
#include <cstdint>

#include "yolotrain/error.hpp"
#include "yolotrain/plots/box_label.hpp"

namespace yolotrain::plots {
namespace {

// Colors.pose_palette, RGB as Ultralytics writes it.
constexpr std::array<std::array<std::uint8_t, 3>, 20> kPosePalette = {{
    {255, 128, 0},   {255, 153, 51},  {255, 178, 102}, {230, 230, 0},   {255, 153, 255},
    {153, 204, 255}, {255, 102, 255}, {255, 51, 255},  {102, 178, 255}, {51, 153, 255},
    {255, 153, 153}, {255, 102, 102}, {255, 51, 51},   {153, 255, 153}, {102, 255, 102},
    {51, 255, 51},   {0, 255, 0},     {0, 0, 255},     {255, 0, 0},     {255, 255, 255},
}};
// COCO's limbs, 1-based keypoint numbers, and the palette index of each limb and keypoint.
constexpr std::array<std::array<int, 2>, 19> kSkeleton = {{{16, 14}, {14, 12}, {17, 15}, {15, 13}, {12, 13},
                                                           {6, 12},  {7, 13},  {6, 7},   {6, 8},   {7, 9},
                                                           {8, 10},  {9, 11},  {2, 3},   {1, 2},   {1, 3},
                                                           {2, 4},   {3, 5},   {4, 6},   {5, 7}}};
constexpr std::array<int, 19> kLimbColor = {9, 9, 9, 9, 7, 7, 7, 0, 0, 0, 0, 0, 16, 16, 16, 16, 16, 16, 16};
constexpr std::array<int, 17> kKptColor = {16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9};

// The image is BGR; Ultralytics' plot_images draws RGB colours on an RGB mosaic: the same pixels.
cv::Scalar rgb_scalar(const std::array<std::uint8_t, 3>& rgb) { return cv::Scalar(rgb[2], rgb[1], rgb[0]); }

}  // namespace

void draw_keypoints(data::Image& image, const at::Tensor& keypoints, int radius, int line_width, double conf_thres,
                    bool limbs) {
  if (keypoints.dim() != 2 || keypoints.size(1) < 2 || keypoints.size(1) > 3)
    throw Error("draw_keypoints: keypoints must be [k, 2 or 3], got " + c10::str(keypoints.sizes()));
  const at::Tensor k = keypoints.to(at::kCPU, at::kFloat).contiguous();
  const int n = static_cast<int>(k.size(0)), dims = static_cast<int>(k.size(1));
  const float* p = k.data_ptr<float>();
  const bool coco = n == 17;
  cv::Mat im(image.height, image.width, CV_8UC3, image.pixels.data());
  const auto shown = [&](int i) {
    const float* q = p + i * dims;
    return dims == 3 ? q[2] >= conf_thres : !(q[0] == 0 && q[1] == 0);
  };
  for (int i = 0; i < n; ++i) {
    if (!shown(i)) continue;
    const cv::Scalar colour = coco ? rgb_scalar(kPosePalette[kKptColor[i]]) : [&] {
      const auto c = class_color(i);
      return cv::Scalar(c[0], c[1], c[2]);
    }();
    const cv::Point at(static_cast<int>(p[i * dims]), static_cast<int>(p[i * dims + 1]));  // int(): truncation
    cv::circle(im, at, radius, colour, cv::FILLED, cv::LINE_AA);
  }
  if (!limbs || !coco) return;  // Ultralytics' limbs are COCO's alone
  for (std::size_t l = 0; l < kSkeleton.size(); ++l) {
    const int a = kSkeleton[l][0] - 1, b = kSkeleton[l][1] - 1;
    if (!shown(a) || !shown(b)) continue;
    const cv::Point pa(static_cast<int>(p[a * dims]), static_cast<int>(p[a * dims + 1]));
    const cv::Point pb(static_cast<int>(p[b * dims]), static_cast<int>(p[b * dims + 1]));
    if (std::min({pa.x, pa.y, pb.x, pb.y}) < 0) continue;
    cv::line(im, pa, pb, rgb_scalar(kPosePalette[kLimbColor[l]]), static_cast<int>(std::ceil(line_width / 2.0)),
             cv::LINE_AA);
  }
}

}  // namespace yolotrain::plots
