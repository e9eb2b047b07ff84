// Ultralytics 8.4.117's classify_augmentations / classify_transforms (data/augment.py) after
// torchvision 0.14's transforms and Pillow's operators they call (ImageEnhance: pillow_enhance.cpp;
// its HSV with hue 0-255; RandAugment: rand_augment.cpp).
#include "yolotrain/data/classify_transforms.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "pillow_enhance.hpp"
#include "yolotrain/data/rand_augment.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::data {
namespace {

constexpr int kTries = 10;  // torchvision's attempts for both crops

int python_round(double v) { return static_cast<int>(std::nearbyint(v)); }  // banker's rounding, as round()

// torch.randint(0, n + 1): a uniform integer in [0, n].
int uniform_int(int n, Rng& rng) { return static_cast<int>(rng.below(static_cast<std::uint64_t>(n) + 1)); }

// Pillow's rgb2hsv (h, s, v in 0-255) and hsv2rgb.
std::array<int, 3> to_hsv(int r, int g, int b) {
  const int maxc = std::max({r, g, b}), minc = std::min({r, g, b});
  if (maxc == minc) return {0, 0, maxc};
  const double cr = maxc - minc, s = cr / maxc;
  const double rc = (maxc - r) / cr, gc = (maxc - g) / cr, bc = (maxc - b) / cr;
  double h = r == maxc ? bc - gc : g == maxc ? 2.0 + rc - bc : 4.0 + gc - rc;
  h = std::fmod(h / 6.0 + 1.0, 1.0);
  return {std::clamp(static_cast<int>(h * 255.0), 0, 255), std::clamp(static_cast<int>(s * 255.0), 0, 255), maxc};
}

std::array<int, 3> to_rgb(int h, int s, int v) {
  if (s == 0) return {v, v, v};
  const double hh = h * 6.0 / 255.0, ss = s / 255.0;
  const int i = static_cast<int>(std::floor(hh));
  const double f = hh - i;
  const int p = python_round(v * (1 - ss)), q = python_round(v * (1 - ss * f));
  const int t = python_round(v * (1 - ss * (1 - f)));
  switch (i % 6) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

// torchvision's adjust_hue on PIL: the HSV hue plus uint8(factor * 255), wrapping around.
void adjust_hue(Image& im, double f) {
  const int shift = static_cast<int>(f * 255);  // numpy's uint8 cast of a negative value wraps
  for (std::size_t i = 0; i < im.pixels.size(); i += 3) {
    std::uint8_t* p = &im.pixels[i];
    const auto hsv = to_hsv(p[2], p[1], p[0]);
    const auto rgb = to_rgb(((hsv[0] + shift) % 256 + 256) % 256, hsv[1], hsv[2]);
    p[0] = static_cast<std::uint8_t>(rgb[2]), p[1] = static_cast<std::uint8_t>(rgb[1]),
    p[2] = static_cast<std::uint8_t>(rgb[0]);
  }
}

Image crop(const Image& im, const CropBox& box) {
  Image out(box.height, box.width);
  for (int y = 0; y < box.height; ++y) {
    std::copy_n(im.pixel(box.top + y, box.left), static_cast<std::size_t>(box.width) * 3, out.pixel(y, 0));
  }
  return out;
}

void flip(Image& im, bool horizontal) {
  Image out(im.height, im.width);
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x) {
      const std::uint8_t* from = horizontal ? im.pixel(y, im.width - 1 - x) : im.pixel(im.height - 1 - y, x);
      std::copy_n(from, 3, out.pixel(y, x));
    }
  im = std::move(out);
}

// One pass of the antialiased bilinear filter to height x width (one of them unchanged), rounded to
// bytes: float [1, 3, h, w] holding whole numbers.
at::Tensor resample(const at::Tensor& x, std::int64_t height, std::int64_t width) {
  return at::_upsample_bilinear2d_aa(x, {height, width}, /*align_corners=*/false, c10::nullopt, c10::nullopt)
      .round_()
      .clamp_(0, 255);
}

}  // namespace

// Pillow resamples horizontally, then vertically, through an 8-bit image in between; libtorch's
// filter is Pillow's, so two passes with that rounding give its pixels (checked on coco8's images:
// equal at 64 px, one value in a thousand off by one at 48).
Image resize_antialiased(const Image& image, int height, int width) {
  if (height < 1 || width < 1) throw Error("resize: an empty target size");
  if (image.height == height && image.width == width) return image;
  at::Tensor x = at::from_blob(const_cast<std::uint8_t*>(image.pixels.data()), {1, image.height, image.width, 3},
                               at::kByte)
                     .permute({0, 3, 1, 2})
                     .to(at::kFloat);
  if (width != image.width) x = resample(x, image.height, width);
  if (height != image.height) x = resample(x, height, width);
  const at::Tensor out = x.to(at::kByte).permute({0, 2, 3, 1}).contiguous();
  Image result(height, width);
  std::copy_n(out.data_ptr<std::uint8_t>(), result.pixels.size(), result.pixels.data());
  return result;
}

CropBox random_resized_crop_box(int height, int width, double scale_min, double scale_max, double ratio_min,
                                double ratio_max, Rng& rng) {
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(ratio_min), log_hi = std::log(ratio_max);
  for (int t = 0; t < kTries; ++t) {
    const double target = area * rng.uniform(scale_min, scale_max);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = python_round(std::sqrt(target * aspect)), h = python_round(std::sqrt(target / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = uniform_int(height - h, rng), left = uniform_int(width - w, rng);
      return {top, left, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;  // the fallback: a centre crop
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = python_round(w / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = python_round(h * ratio_max);
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

void color_jitter(Image& image, double hsv_h, double hsv_s, double hsv_v, Rng& rng) {
  std::array<int, 4> order{0, 1, 2, 3};  // torch.randperm(4): brightness, contrast, saturation, hue
  for (int i = 3; i > 0; --i) std::swap(order[i], order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  const auto factor = [&](double g) { return g > 0 ? rng.uniform(std::max(0.0, 1 - g), 1 + g) : 1.0; };
  const double b = factor(hsv_v), c = factor(hsv_v), s = factor(hsv_s);
  const double h = hsv_h > 0 ? rng.uniform(-hsv_h, hsv_h) : 0.0;
  for (int op : order) {
    if (op == 0 && hsv_v > 0) pillow::brightness(image, b);
    if (op == 1 && hsv_v > 0) pillow::contrast(image, c);
    if (op == 2 && hsv_s > 0) pillow::color(image, s);
    if (op == 3 && hsv_h > 0) adjust_hue(image, h);
  }
}

void random_erasing(Image& image, double p, Rng& rng) {
  if (p <= 0 || rng.uniform() >= p) return;
  const double area = static_cast<double>(image.height) * image.width;
  const double log_lo = std::log(0.3), log_hi = std::log(3.3);
  for (int t = 0; t < kTries; ++t) {
    const double erase = area * rng.uniform(0.02, 0.33);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int h = python_round(std::sqrt(erase * aspect)), w = python_round(std::sqrt(erase / aspect));
    if (!(h < image.height && w < image.width)) continue;
    const int top = uniform_int(image.height - h, rng), left = uniform_int(image.width - w, rng);
    for (int y = top; y < top + h; ++y) std::fill_n(image.pixel(y, left), static_cast<std::size_t>(w) * 3, 0);
    return;
  }
}

Image classify_augment(const Image& image, int size, const AugmentConfig& hyp, Rng& rng) {
  const CropBox box =
      random_resized_crop_box(image.height, image.width, 1.0 - hyp.scale, 1.0, 3.0 / 4.0, 4.0 / 3.0, rng);
  Image out = resize_antialiased(crop(image, box), size, size);
  if (hyp.fliplr > 0 && rng.uniform() < hyp.fliplr) flip(out, true);
  if (hyp.flipud > 0 && rng.uniform() < hyp.flipud) flip(out, false);
  if (hyp.rand_augment) {
    rand_augment(out, rng);  // in place of the colour jitter (classify_augmentations' force_color_jitter False)
  } else {
    color_jitter(out, hyp.hsv_h, hyp.hsv_s, hyp.hsv_v, rng);
  }
  random_erasing(out, hyp.erasing, rng);
  return out;
}

Image classify_centre_crop(const Image& image, int size) {
  const bool wide = image.width >= image.height;
  const int shorter = wide ? image.height : image.width, longer = wide ? image.width : image.height;
  const int resized_long = static_cast<int>(static_cast<double>(size) * longer / shorter);
  const Image resized =
      wide ? resize_antialiased(image, size, resized_long) : resize_antialiased(image, resized_long, size);
  const int top = python_round((resized.height - size) / 2.0), left = python_round((resized.width - size) / 2.0);
  if (top < 0 || left < 0) throw Error("classification centre crop: the image is smaller than the crop");
  return crop(resized, {top, left, size, size});
}

}  // namespace yolotrain::data
