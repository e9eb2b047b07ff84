#pragma once
// Zero-copy cv::Mat views of yolotrain::data::Image, and the copy back.
#include <opencv2/core.hpp>

#include "yolotrain/data/image.hpp"

namespace yolotrain::data::detail {

inline cv::Mat view(Image& image) { return cv::Mat(image.height, image.width, CV_8UC3, image.pixels.data()); }
inline cv::Mat view(const Image& image) {
  return cv::Mat(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.pixels.data()));
}

/// An Image holding a copy of `mat` (CV_8UC3).
inline Image from_mat(const cv::Mat& mat) {
  Image out(mat.rows, mat.cols);
  cv::Mat dst = view(out);
  mat.copyTo(dst);
  return out;
}

}  // namespace yolotrain::data::detail
