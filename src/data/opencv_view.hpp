#pragma once
// Zero-copy cv::Mat views of yolotrain::data::Image, and the copy back.
#include <opencv2/core.hpp>

#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::data::detail {

inline cv::Mat view(Image& image) { return cv::Mat(image.height, image.width, CV_8UC3, image.pixels.data()); }
inline cv::Mat view(const Image& image) {
  return cv::Mat(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.pixels.data()));
}

/// `image` resized to h x w (its buffer reused when large enough; pixels undefined) and a view of
/// it, for OpenCV calls that write their result straight into an Image.
inline cv::Mat output(Image& image, int h, int w) {
  image.height = h, image.width = w;
  image.pixels.resize(static_cast<std::size_t>(h) * w * 3);
  return view(image);
}

/// Throws when OpenCV reallocated `dst` instead of writing into the Image it views (a size slip).
inline void expect_written(const cv::Mat& dst, const Image& image) {
  if (dst.data != image.pixels.data()) throw Error("internal: an OpenCV result was not written in place");
}

/// An Image holding a copy of `mat` (CV_8UC3).
inline Image from_mat(const cv::Mat& mat) {
  Image out(mat.rows, mat.cols);
  cv::Mat dst = view(out);
  mat.copyTo(dst);
  return out;
}

}  // namespace yolotrain::data::detail
