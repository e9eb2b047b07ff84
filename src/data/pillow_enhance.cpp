// Pillow 9.4.0's ImageEnhance (PIL/ImageEnhance.py), Image.blend (libImaging/Blend.c) and the 3x3
// filter (libImaging/Filter.c ImagingFilter3x3), operation for operation in the same float
// arithmetic, so that the bytes are Pillow's (tests/unit/data/rand_augment_test.cpp against
// torchvision's own results).
#include "pillow_enhance.hpp"

#include <array>
#include <cstddef>

namespace yolotrain::data::pillow {
namespace {

// Image.blend's one byte: degenerate + alpha (value - degenerate) in C floats, clipped to 0-255,
// truncated (its interpolating and extrapolating branches give the same bytes).
std::uint8_t blend(int degenerate, int value, float alpha) {
  const float v = static_cast<float>(degenerate) + alpha * static_cast<float>(value - degenerate);
  if (v <= 0.0f) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<std::uint8_t>(v);
}

// ImageFilter.SMOOTH of `im`: rows y+1, y, y-1 summed in that order, each left to right, on 0.5
// (Pillow's rounding), in floats; the kernel's weights are float(k) / float(13).
Image smooth(const Image& im) {
  Image out = im;
  const float side = 1.0f / 13.0f, centre = 5.0f / 13.0f;
  const std::array<float, 9> k{side, side, side, side, centre, side, side, side, side};
  const auto row = [&](const std::uint8_t* p, const float* w) {
    return static_cast<float>(p[-3]) * w[0] + static_cast<float>(p[0]) * w[1] + static_cast<float>(p[3]) * w[2];
  };
  for (int y = 1; y < im.height - 1; ++y)
    for (int x = 1; x < im.width - 1; ++x)
      for (int c = 0; c < 3; ++c) {
        float ss = 0.5f;
        ss += row(im.pixel(y + 1, x) + c, &k[0]);
        ss += row(im.pixel(y, x) + c, &k[3]);
        ss += row(im.pixel(y - 1, x) + c, &k[6]);
        out.pixel(y, x)[c] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : static_cast<std::uint8_t>(ss);
      }
  return out;
}

}  // namespace

std::uint8_t grey(const std::uint8_t* bgr) {
  return static_cast<std::uint8_t>((bgr[2] * 19595 + bgr[1] * 38470 + bgr[0] * 7471 + 0x8000) >> 16);
}

void brightness(Image& image, double factor) {
  const auto alpha = static_cast<float>(factor);
  for (auto& v : image.pixels) v = blend(0, v, alpha);
}

void contrast(Image& image, double factor) {
  double sum = 0;  // ImageStat's mean of the L image, exact in doubles
  for (std::size_t i = 0; i < image.pixels.size(); i += 3) sum += grey(&image.pixels[i]);
  const int mean = static_cast<int>(sum / static_cast<double>(image.pixels.size() / 3) + 0.5);
  const auto alpha = static_cast<float>(factor);
  for (auto& v : image.pixels) v = blend(mean, v, alpha);
}

void color(Image& image, double factor) {
  const auto alpha = static_cast<float>(factor);
  for (std::size_t i = 0; i < image.pixels.size(); i += 3) {
    const int g = grey(&image.pixels[i]);
    for (int c = 0; c < 3; ++c) image.pixels[i + c] = blend(g, image.pixels[i + c], alpha);
  }
}

void sharpness(Image& image, double factor) {
  const Image degenerate = smooth(image);
  const auto alpha = static_cast<float>(factor);
  for (std::size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = blend(degenerate.pixels[i], image.pixels[i], alpha);
  }
}

}  // namespace yolotrain::data::pillow
