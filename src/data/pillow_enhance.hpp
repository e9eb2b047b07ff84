#pragma once
// Pillow 9.4's ImageEnhance on yolotrain's BGR images, as torchvision's adjust_brightness,
// adjust_contrast, adjust_saturation and adjust_sharpness call it on a PIL image (ColorJitter and
// RandAugment in classification): each blends the image with a "degenerate" image by Image.blend,
// whose arithmetic is C floats, truncated to bytes (libImaging/Blend.c). Written by hand: no
// library gives Pillow's pixels, and Ultralytics' classification batches are made of them.
#include <cstdint>

#include "yolotrain/data/image.hpp"

namespace yolotrain::data::pillow {

/// Pillow's RGB -> L (Convert.c, ITU-R 601-2 in 16-bit fixed point) of one BGR pixel.
std::uint8_t grey(const std::uint8_t* bgr);

/// ImageEnhance.Brightness(image).enhance(factor): blended with black.
void brightness(Image& image, double factor);

/// ImageEnhance.Contrast: blended with a grey image of the L image's mean, rounded.
void contrast(Image& image, double factor);

/// ImageEnhance.Color (torchvision's adjust_saturation): blended with the image's own L.
void color(Image& image, double factor);

/// ImageEnhance.Sharpness: blended with the image under ImageFilter.SMOOTH (3x3, 1-1-1/1-5-1/1-1-1
/// over 13, the outermost rows and columns left as they are).
void sharpness(Image& image, double factor);

}  // namespace yolotrain::data::pillow
