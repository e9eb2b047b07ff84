// torchvision 0.14.1's RandAugment (transforms/autoaugment.py: _augmentation_space, forward,
// _apply_op) over Pillow 9.4.0's operators: the affine transforms of transforms/functional.py
// (_get_inverse_affine_matrix) and PIL/Image.py (rotate, transform) resampled as
// libImaging/Geometry.c does (bilinear_filter32RGB through ImagingGenericTransform), and
// PIL/ImageOps.py's lookup tables. Written by hand, step for step in the same double and float
// arithmetic, because no C++ library gives Pillow's pixels.
#include "yolotrain/data/rand_augment.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "pillow_enhance.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::data {
namespace ra {  // Pillow's and torchvision's pieces (named: the unity build joins files' anonymous namespaces)
namespace {

constexpr double kPi = 3.141592653589793;  // CPython's Py_MATH_PI
constexpr int kBin = 9, kBins = 31;        // RandAugment's magnitude and num_magnitude_bins

double degrees(double radians) { return radians * (180.0 / kPi); }  // math.degrees
double radians(double degrees) { return degrees * (kPi / 180.0); }  // math.radians

// Python's round(v, 15): the nearest 15-decimal value (glibc's printf rounds exactly, as CPython's dtoa).
double round15(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.15f", v);
  return std::strtod(text, nullptr);
}

// torch.linspace(0, end, 31)[9] in float32, as a double.
double linspace_bin(double end) {
  const float step = static_cast<float>(end) / static_cast<float>(kBins - 1);
  return static_cast<double>(step * static_cast<float>(kBin));
}

using Matrix = std::array<double, 6>;  // Pillow's AFFINE data: output pixel centre -> input point

// torchvision's _get_inverse_affine_matrix(center, angle 0, translate, scale 1, shear) for PIL.
Matrix inverse_affine(double cx, double cy, double tx, double ty, double shear_x_deg, double shear_y_deg) {
  const double rot = radians(0.0), sx = radians(shear_x_deg), sy = radians(shear_y_deg);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  Matrix m{d, -b, 0.0, -c, a, 0.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// Image.rotate(angle, BILINEAR, expand False, centre None): the matrix it hands to transform().
Matrix rotation(double angle, int height, int width) {
  angle = std::fmod(angle, 360.0);  // Python's float %, the divisor's sign
  if (angle < 0) angle += 360.0;
  const double cx = width / 2.0, cy = height / 2.0, t = -radians(angle);
  Matrix m{round15(std::cos(t)), round15(std::sin(t)), 0.0, round15(-std::sin(t)), round15(std::cos(t)), 0.0};
  const double x = -cx, y = -cy;
  const double c = m[0] * x + m[1] * y + m[2], f = m[3] * x + m[4] * y + m[5];
  m[2] = c + cx;
  m[5] = f + cy;
  return m;
}

int pil_floor(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }

// Image.transform(size, AFFINE, m, BILINEAR, fillcolor black): each output pixel's centre mapped by
// `m`; outside the image it stays black; inside, bilinear_filter32RGB's interpolation, truncated.
Image affine(const Image& in, const Matrix& m) {
  Image out(in.height, in.width);  // black
  const auto clip_x = [&](int x) { return x < 0 ? 0 : x < in.width ? x : in.width - 1; };
  const auto clip_y = [&](int y) { return y < 0 ? 0 : y < in.height ? y : in.height - 1; };
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < in.width; ++x) {
      const double px = x + 0.5, py = y + 0.5;
      double xin = m[0] * px + m[1] * py + m[2], yin = m[3] * px + m[4] * py + m[5];
      if (xin < 0.0 || xin >= in.width || yin < 0.0 || yin >= in.height) continue;
      xin -= 0.5;
      yin -= 0.5;
      const int xi = pil_floor(xin), yi = pil_floor(yin);
      const double dx = xin - xi, dy = yin - yi;
      const int x0 = clip_x(xi), x1 = clip_x(xi + 1);
      const bool below = yi + 1 >= 0 && yi + 1 < in.height;
      for (int c = 0; c < 3; ++c) {
        const std::uint8_t* row = in.pixel(clip_y(yi), 0) + c;
        double v1 = row[x0 * 3] + (row[x1 * 3] - row[x0 * 3]) * dx;
        double v2 = v1;
        if (below) {
          const std::uint8_t* next = in.pixel(yi + 1, 0) + c;
          v2 = next[x0 * 3] + (next[x1 * 3] - next[x0 * 3]) * dx;
        }
        v1 = v1 + (v2 - v1) * dy;
        out.pixel(y, x)[c] = static_cast<std::uint8_t>(v1);
      }
    }
  return out;
}

using Lut = std::array<std::uint8_t, 256>;

// Image.point with one table per channel, each made from that channel's histogram.
template <typename MakeLut>
void per_channel(Image& image, MakeLut make) {
  for (int c = 0; c < 3; ++c) {
    std::array<long, 256> h{};
    for (std::size_t i = c; i < image.pixels.size(); i += 3) ++h[image.pixels[i]];
    const Lut lut = make(h);
    for (std::size_t i = c; i < image.pixels.size(); i += 3) image.pixels[i] = lut[image.pixels[i]];
  }
}

Lut identity_lut() {
  Lut lut{};
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<std::uint8_t>(i);
  return lut;
}

// ImageOps.autocontrast(cutoff 0): the darkest value to 0, the lightest to 255.
Lut autocontrast_lut(const std::array<long, 256>& h) {
  int lo = 0, hi = 255;
  while (lo < 255 && h[lo] == 0) ++lo;
  while (hi > 0 && h[hi] == 0) --hi;
  if (hi <= lo) return identity_lut();
  const double scale = 255.0 / (hi - lo), offset = -lo * scale;
  Lut lut{};
  for (int i = 0; i < 256; ++i) {
    const int v = static_cast<int>(i * scale + offset);  // Python's int(): towards zero
    lut[i] = static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
  }
  return lut;
}

// ImageOps.equalize: the cumulative histogram in steps of (pixels - the last value's count) // 255.
Lut equalize_lut(const std::array<long, 256>& h) {
  long total = 0, last = 0;
  int used = 0;
  for (long n : h) {
    if (n == 0) continue;
    total += n, last = n, ++used;
  }
  if (used <= 1) return identity_lut();
  const long step = (total - last) / 255;
  if (step == 0) return identity_lut();
  Lut lut{};
  long n = step / 2;
  for (int i = 0; i < 256; ++i) {
    lut[i] = static_cast<std::uint8_t>(std::min<long>(n / step, 255));  // Image.point clips to 0-255
    n += h[i];
  }
  return lut;
}

void point(Image& image, const Lut& lut) {
  for (auto& v : image.pixels) v = lut[v];
}

}  // namespace
}  // namespace ra

std::string rand_augment_name(RandAugmentOp op) {
  static const std::array<const char*, kRandAugmentOps> names{
      "Identity",   "ShearX", "ShearY",   "TranslateX", "TranslateY", "Rotate",       "Brightness",
      "Color",      "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"};
  return names.at(static_cast<std::size_t>(op));
}

bool rand_augment_signed(RandAugmentOp op) {
  return op != RandAugmentOp::Identity && op != RandAugmentOp::Posterize && op != RandAugmentOp::Solarize &&
         op != RandAugmentOp::AutoContrast && op != RandAugmentOp::Equalize;
}

double rand_augment_magnitude(RandAugmentOp op, int height, int width) {
  switch (op) {
    case RandAugmentOp::ShearX:
    case RandAugmentOp::ShearY: return ra::linspace_bin(0.3);
    case RandAugmentOp::TranslateX: return ra::linspace_bin(150.0 / 331.0 * width);
    case RandAugmentOp::TranslateY: return ra::linspace_bin(150.0 / 331.0 * height);
    case RandAugmentOp::Rotate: return ra::linspace_bin(30.0);
    case RandAugmentOp::Brightness:
    case RandAugmentOp::Color:
    case RandAugmentOp::Contrast:
    case RandAugmentOp::Sharpness: return ra::linspace_bin(0.9);
    case RandAugmentOp::Posterize: return 8 - static_cast<int>(std::nearbyint(ra::kBin / ((ra::kBins - 1) / 4.0)));
    case RandAugmentOp::Solarize: return 255.0 + static_cast<double>(-255.0f / (ra::kBins - 1) * ra::kBin);
    default: return 0.0;
  }
}

void apply_rand_augment_op(Image& image, RandAugmentOp op, double magnitude) {
  const double cx = image.width * 0.5, cy = image.height * 0.5;
  switch (op) {
    case RandAugmentOp::Identity: return;
    case RandAugmentOp::ShearX:
      image = ra::affine(image, ra::inverse_affine(0, 0, 0, 0, ra::degrees(std::atan(magnitude)), 0.0));
      return;
    case RandAugmentOp::ShearY:
      image = ra::affine(image, ra::inverse_affine(0, 0, 0, 0, 0.0, ra::degrees(std::atan(magnitude))));
      return;
    case RandAugmentOp::TranslateX:  // int(magnitude): whole pixels, towards zero
      image = ra::affine(image, ra::inverse_affine(cx, cy, static_cast<int>(magnitude), 0, 0, 0));
      return;
    case RandAugmentOp::TranslateY:
      image = ra::affine(image, ra::inverse_affine(cx, cy, 0, static_cast<int>(magnitude), 0, 0));
      return;
    case RandAugmentOp::Rotate: image = ra::affine(image, ra::rotation(magnitude, image.height, image.width)); return;
    case RandAugmentOp::Brightness: pillow::brightness(image, 1.0 + magnitude); return;
    case RandAugmentOp::Color: pillow::color(image, 1.0 + magnitude); return;
    case RandAugmentOp::Contrast: pillow::contrast(image, 1.0 + magnitude); return;
    case RandAugmentOp::Sharpness: pillow::sharpness(image, 1.0 + magnitude); return;
    case RandAugmentOp::Posterize: {  // ImageOps.posterize: the low 8 - bits bits cleared
      const int mask = ~((1 << (8 - static_cast<int>(magnitude))) - 1);
      ra::Lut lut{};
      for (int i = 0; i < 256; ++i) lut[i] = static_cast<std::uint8_t>(i & mask);
      ra::point(image, lut);
      return;
    }
    case RandAugmentOp::Solarize: {  // ImageOps.solarize: inverted from the threshold up
      ra::Lut lut{};
      for (int i = 0; i < 256; ++i) lut[i] = static_cast<std::uint8_t>(i < magnitude ? i : 255 - i);
      ra::point(image, lut);
      return;
    }
    case RandAugmentOp::AutoContrast: ra::per_channel(image, ra::autocontrast_lut); return;
    case RandAugmentOp::Equalize: ra::per_channel(image, ra::equalize_lut); return;
  }
  throw Error("RandAugment: unknown operator " + std::to_string(static_cast<int>(op)));
}

void rand_augment(Image& image, Rng& rng) {
  for (int k = 0; k < 2; ++k) {  // num_ops
    const auto op = static_cast<RandAugmentOp>(rng.below(kRandAugmentOps));
    double magnitude = rand_augment_magnitude(op, image.height, image.width);
    if (rand_augment_signed(op) && rng.below(2) == 1) magnitude = -magnitude;
    apply_rand_augment_op(image, op, magnitude);
  }
}

}  // namespace yolotrain::data
