#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::predict {

/// Ultralytics' predict preprocessing of BGR images: LetterBox to imgsz_h x imgsz_w (gray 114; with
/// `minimal_padding`, only to a multiple of `stride` (the model's max_stride()) when all images
/// share one size, as for PyTorch models; without, always the full size, as a static ONNX graph needs),
/// stacked, BGR -> RGB, HWC -> CHW. Returns uint8 [B, 3, H, W]; the network reads it as float / 255.
/// Throws yolotrain::Error for an empty or malformed image.
at::Tensor preprocess(const std::vector<const data::Image*>& images, std::int64_t imgsz_h, std::int64_t imgsz_w,
                      bool minimal_padding = true, std::int64_t stride = 32);

/// Ultralytics' classification predict preprocessing (classify_transforms): each BGR image's shorter
/// side resized to imgsz_h and its centre square cropped (data::classify_centre_crop) when imgsz_h ==
/// imgsz_w, else resized to imgsz_h x imgsz_w; stacked, BGR -> RGB, HWC -> CHW, uint8 [B, 3, H, W].
at::Tensor classify_preprocess(const std::vector<const data::Image*>& images, std::int64_t imgsz_h,
                               std::int64_t imgsz_w);

}  // namespace yolotrain::predict
