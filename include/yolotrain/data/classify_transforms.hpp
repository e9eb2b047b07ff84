#pragma once
// Ultralytics 8.4's classification transforms (data/augment.py classify_augmentations and
// classify_transforms, torchvision's transforms on a PIL image), on yolotrain's BGR images: what a
// classification batch's images are made of (LoaderOptions::classify). Resizes are PIL's bilinear
// filter with antialiasing (libtorch's _upsample_bilinear2d_aa, a horizontal then a vertical pass
// rounded to bytes between them, as Pillow does: its pixels, to one level in a few thousand); random
// draws are yolotrain's Rng, not torch's generator, so the distributions are Ultralytics' and the
// draws are not (docs/data.md).
#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/data/rng.hpp"

namespace yolotrain::data {

/// A crop of an image: its top-left corner and size in pixels.
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};

/// torchvision's RandomResizedCrop.get_params for an image of `height` x `width`: an area of
/// `scale` (min, max) of the image and a log-uniform aspect ratio in `ratio` (min, max), ten tries,
/// then the centre crop of the ratio nearest the image's.
CropBox random_resized_crop_box(int height, int width, double scale_min, double scale_max, double ratio_min,
                                double ratio_max, Rng& rng);

/// `image` resized to `height` x `width` as torchvision's Resize does it on a PIL image (Pillow's
/// BILINEAR: antialiased, horizontal pass first, bytes between the passes).
Image resize_antialiased(const Image& image, int height, int width);

/// torchvision's ColorJitter(brightness=hsv_v, contrast=hsv_v, saturation=hsv_s, hue=hsv_h) as
/// Ultralytics builds it: a factor of each drawn uniformly (brightness, contrast, saturation in
/// [max(0, 1 - g), 1 + g], hue in [-h, h]) and the four applied in a random order (brightness:
/// scaled; contrast: blended with the grey image's mean; saturation: blended with the grey image;
/// hue: rotated in HSV).
void color_jitter(Image& image, double hsv_h, double hsv_s, double hsv_v, Rng& rng);

/// torchvision's RandomErasing(p, scale (0.02, 0.33), ratio (0.3, 3.3), value 0): with probability
/// `p`, a rectangle of the image set to 0 (black, as erasing the normalised tensor does).
void random_erasing(Image& image, double p, Rng& rng);

/// Ultralytics' classification training transforms (classify_augmentations):
/// RandomResizedCrop(size, scale (1 - hyp.scale, 1), ratio (3/4, 4/3)), horizontal flip with
/// hyp.fliplr, vertical with hyp.flipud, then rand_augment() when hyp.rand_augment
/// (auto_augment=randaugment, Ultralytics' default) or else color_jitter(hyp.hsv_*), then
/// random_erasing(hyp.erasing).
Image classify_augment(const Image& image, int size, const AugmentConfig& hyp, Rng& rng);

/// Ultralytics' classification validation and predict transforms (classify_transforms): the
/// shorter side resized to `size` (the longer to int(size * long / short)), then the centre
/// `size` x `size` crop.
Image classify_centre_crop(const Image& image, int size);

}  // namespace yolotrain::data
