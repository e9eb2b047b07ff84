#include "yolotrain/predict/preprocess.hpp"

#include <ATen/ATen.h>

#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/classify_transforms.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::predict {

namespace {

void require_images(const std::vector<const data::Image*>& images) {
  if (images.empty()) throw Error("predict: no images to preprocess");
  for (const data::Image* im : images) {
    if (im->empty() || im->pixels.size() != static_cast<std::size_t>(im->height) * im->width * 3) {
      throw Error("predict: an empty or malformed image (" + std::to_string(im->height) + "x" +
                  std::to_string(im->width) + ")");
    }
  }
}

// Equal-sized BGR images as uint8 [B, 3, H, W] RGB.
at::Tensor stack_rgb(const std::vector<data::Image>& images) {
  const int h = images[0].height, w = images[0].width;
  at::Tensor hwc = at::empty({static_cast<std::int64_t>(images.size()), h, w, 3}, at::kByte);
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::memcpy(hwc[static_cast<std::int64_t>(i)].data_ptr(), images[i].pixels.data(), images[i].pixels.size());
  }
  return hwc.flip(-1).permute({0, 3, 1, 2}).contiguous();
}

}  // namespace

at::Tensor classify_preprocess(const std::vector<const data::Image*>& images, std::int64_t imgsz_h,
                               std::int64_t imgsz_w) {
  require_images(images);
  std::vector<data::Image> cropped;
  for (const data::Image* im : images) {
    cropped.push_back(imgsz_h == imgsz_w
                          ? data::classify_centre_crop(*im, static_cast<int>(imgsz_h))
                          : data::resize_antialiased(*im, static_cast<int>(imgsz_h), static_cast<int>(imgsz_w)));
  }
  return stack_rgb(cropped);
}

at::Tensor preprocess(const std::vector<const data::Image*>& images, std::int64_t imgsz_h, std::int64_t imgsz_w,
                      bool minimal_padding, std::int64_t stride) {
  require_images(images);
  std::set<std::pair<int, int>> shapes;
  for (const data::Image* im : images) shapes.emplace(im->height, im->width);
  const bool auto_pad = minimal_padding && shapes.size() == 1;  // Ultralytics: minimal padding when the shapes agree
  std::vector<data::Image> boxed;
  for (const data::Image* im : images) {
    data::Labelled sample{*im, {}};
    data::letterbox(sample, static_cast<int>(imgsz_h), static_cast<int>(imgsz_w), auto_pad, true,
                    static_cast<int>(stride));
    boxed.push_back(std::move(sample.image));
  }
  return stack_rgb(boxed);
}

}  // namespace yolotrain::predict
