#pragma once
// torchvision 0.14's RandAugment as Ultralytics 8.4 runs it for classification's default
// auto_augment=randaugment (data/augment.py classify_augmentations: T.RandAugment(interpolation=
// BILINEAR) after the random resized crop and the flips, in place of the colour jitter): two
// operators drawn from fourteen, each at magnitude 9 of 31 bins, a signed one negated half the
// time, on the PIL image -- here on yolotrain's BGR image, with Pillow 9.4's pixels
// (tests/unit/data/rand_augment_test.cpp against torchvision's own results,
// scripts/torchvision_randaugment.py). The draws are yolotrain's Rng, not torch's: the same
// distribution, other draws (docs/data.md).
#include <string>

#include "yolotrain/data/image.hpp"
#include "yolotrain/data/rng.hpp"

namespace yolotrain::data {

/// RandAugment's operators, in torchvision's order (its _augmentation_space).
enum class RandAugmentOp {
  Identity,
  ShearX,
  ShearY,
  TranslateX,
  TranslateY,
  Rotate,
  Brightness,
  Color,
  Contrast,
  Sharpness,
  Posterize,
  Solarize,
  AutoContrast,
  Equalize,
};

/// How many operators there are (torchvision draws one uniformly from them).
inline constexpr int kRandAugmentOps = 14;

/// The operator's name as torchvision spells it ("ShearX", "AutoContrast", ...).
std::string rand_augment_name(RandAugmentOp op);

/// Whether torchvision negates the operator's magnitude half the time.
bool rand_augment_signed(RandAugmentOp op);

/// torchvision's magnitude of `op` at bin 9 of 31 for an image of `height` x `width` (the float32
/// value of its linspace; 0 for the operators without one): shears 0.09, translations 150/331 x 9/30
/// of the side, rotation 9 degrees, enhancements 0.27, posterize 7 bits, solarize above 178.5.
double rand_augment_magnitude(RandAugmentOp op, int height, int width);

/// torchvision's _apply_op(image, op, magnitude, BILINEAR, fill None) on a PIL image: shears and
/// translations by Pillow's affine transform, rotation about the centre by Image.rotate (bilinear,
/// black outside), the enhancements 1 + magnitude (ImageEnhance), posterize, solarize,
/// autocontrast and equalize as ImageOps does them per channel.
void apply_rand_augment_op(Image& image, RandAugmentOp op, double magnitude);

/// RandAugment(num_ops=2, magnitude=9, num_magnitude_bins=31): twice, an operator drawn uniformly
/// and, if signed, its magnitude negated with probability 1/2, applied to `image`.
void rand_augment(Image& image, Rng& rng);

}  // namespace yolotrain::data
