#pragma once

#include <cstdint>
#include <vector>

#include "yolotrain/data/image.hpp"
#include "yolotrain/data/rng.hpp"

namespace yolotrain::data {

/// Ultralytics' augmentation hyper-parameters (same names, same defaults).
struct AugmentConfig {
  double hsv_h = 0.015;      ///< hue gain (fraction)
  double hsv_s = 0.7;        ///< saturation gain (fraction)
  double hsv_v = 0.4;        ///< value gain (fraction)
  /// The hue's change: true, Ultralytics 8.4's shift by hsv_h x 180 with wrap-around (since 8.3.79);
  /// false, 8.3.78's scaling by 1 + hsv_h (compat=8.3).
  bool hue_shift = true;
  double degrees = 0.0;      ///< rotation (+/- deg)
  double translate = 0.1;    ///< translation (+/- fraction)
  double scale = 0.5;        ///< scale gain (+/-)
  double shear = 0.0;        ///< shear (+/- deg)
  double perspective = 0.0;  ///< perspective (+/- fraction), 0 to 0.001
  double flipud = 0.0;       ///< probability of an up-down flip
  double fliplr = 0.5;       ///< probability of a left-right flip
  double mosaic = 1.0;       ///< probability of mosaic
  double mixup = 0.0;        ///< probability of mixup
  double cutmix = 0.0;       ///< probability of CutMix (Ultralytics 8.4's), after mixup
  double copy_paste = 0.0;   ///< fraction of the instances copy_paste() pastes (segmentation)
  /// copy_paste's source: false, the sample mirrored ("flip"); true, another sample ("mixup": applied
  /// with probability copy_paste after random_perspective).
  bool copy_paste_mixup = false;
  /// A pose dataset's `flip_idx` (its data YAML): the keypoint each one becomes under a flip,
  /// applied by random_flip() for either direction, as Ultralytics' RandomFlip. Empty: none.
  std::vector<int> flip_idx;
  /// Classification: the probability of random erasing (Ultralytics' `erasing`, torchvision's
  /// RandomErasing after the other transforms); detection ignores it.
  double erasing = 0.4;
  /// Classification: torchvision's RandAugment in place of the colour jitter (Ultralytics'
  /// auto_augment=randaugment, its default; rand_augment.hpp); detection ignores it.
  bool rand_augment = false;
};

/// A box in pixels (corners) with its class, as augmentations carry them, and its outline when the
/// labels are polygons: x y pairs in pixels (resampled to 1000 points, as Ultralytics does), which
/// the augmentations move with the box and from which random_perspective() recomputes the box;
/// and its keypoints for pose labels: x y visibility triplets, x y in pixels, which the
/// augmentations move, marking those they put outside the image invisible (visibility 0) and
/// clipping them to it, as Ultralytics' Instances.clip.
struct PixelBox {
  int cls = 0;
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  std::vector<float> segment;    ///< empty for a box label
  std::vector<float> keypoints;  ///< empty unless pose labels
};

/// Whether any of `boxes` carries an outline (the labels are polygons).
bool has_outlines(const std::vector<PixelBox>& boxes);

/// An image with its boxes in pixels.
struct Labelled {
  Image image;
  std::vector<PixelBox> boxes;
};

/// What letterbox() did: new = old * ratio + pad.
struct LetterboxInfo {
  double ratio_h = 1, ratio_w = 1;  ///< scale factors
  double pad_x = 0, pad_y = 0;      ///< left / top padding in pixels
};

/// Ultralytics' load_image (8.1 and later): resizes so the long side is `imgsz`
/// (w = min(ceil(w0*r), imgsz)) with INTER_LINEAR, for training and validation alike (8.0 used
/// INTER_AREA to shrink validation images). Boxes are scaled too.
void resize_long_side(Labelled& sample, int imgsz);

/// Ultralytics' LetterBox: resize to fit (new_h, new_w) keeping the aspect ratio (never enlarging
/// when `scaleup` is false), then pad with 114 split evenly (round(d -/+ 0.1)); `auto_pad` pads
/// only to a multiple of `stride` instead. Boxes follow.
LetterboxInfo letterbox(Labelled& sample, int new_h, int new_w, bool auto_pad = false, bool scaleup = true,
                        int stride = 32);

/// Ultralytics' 4-image Mosaic: the images (already resize_long_side'd) are placed around a random
/// centre in [imgsz/2, 3*imgsz/2) on a 2*imgsz canvas filled with 114; boxes are clipped to the
/// canvas and zero-area ones dropped. Follow with random_perspective(border = -imgsz/2).
Labelled mosaic4(const std::vector<Labelled>& four, int imgsz, Rng& rng);

/// Ultralytics' RandomPerspective: M = T*S*R*P*C (degrees, translate, scale, shear, perspective),
/// warpAffine/warpPerspective with fill 114 to an output of (h + 2*border, w + 2*border), boxes
/// transformed by their 4 corners, clipped, then filtered by box_candidates (w, h > 2 px, area
/// ratio > 0.1, aspect < 100). A box with an outline takes the box of its transformed outline
/// inside the output (apply_segments, segment_box), the outline clipped to that box and to the
/// output; the area-ratio threshold is then 0.01, as Ultralytics' for polygon labels.
void random_perspective(Labelled& sample, const AugmentConfig& cfg, Rng& rng, int border = 0);

/// Ultralytics' RandomHSV: LUTs on the HSV channels, r = uniform(-1, 1) * (h, s, v): the hue
/// shifted by r_h x 180 with wrap-around (or scaled by 1 + r_h: AugmentConfig::hue_shift), the
/// saturation and value scaled by 1 + r.
void random_hsv(Image& image, const AugmentConfig& cfg, Rng& rng);
/// The hue LUT's entry for OpenCV hue `x` (0-179) at r_h = uniform(-1, 1) * hsv_h, as Ultralytics'
/// numpy computes it and casts it to uint8 (`shift`: 8.4's rule, else 8.3.78's).
std::uint8_t hue_lut_entry(int x, double r, bool shift);

/// Ultralytics' RandomFlip, up-down with p = flipud then left-right with p = fliplr; keypoints
/// are reordered by cfg.flip_idx after either flip (Ultralytics does it for both directions).
void random_flip(Labelled& sample, const AugmentConfig& cfg, Rng& rng);

/// Ultralytics' MixUp: r ~ Beta(32, 32), image = a*r + b*(1-r) (same size), boxes concatenated.
void mixup(Labelled& a, const Labelled& b, Rng& rng);

/// Ultralytics 8.4's CutMix (data/augment.py CutMix, beta 1, 3 areas): three random rectangles of
/// side sqrt(1 - lam) (lam ~ Beta(1, 1)) around random centres; one of those that overlap none of
/// `a`'s boxes (bbox_ioa 0) is chosen, and `b`'s instances covering at least 10 % of their box
/// inside it (1 % with outlines) are clipped to it and added to `a`, whose pixels there become
/// `b`'s (same size). Nothing changes when no rectangle is free or none of `b`'s instances is in
/// the chosen one. Returns whether it changed `a`.
bool cutmix(Labelled& a, const Labelled& b, Rng& rng);

/// Ultralytics 8.4's CopyPaste (src/data/copy_paste.cpp): the instances of `source` (mode "mixup";
/// the same size as the sample) or, without one, the sample's own mirrored left-right (mode
/// "flip") whose boxes cover less than 30 % of every instance's box (bbox_ioa), the least covering
/// first, round(p * their count) of them pasted — their outlines filled into a mask, the source's
/// (or mirrored) pixels copied there — and appended to the boxes. It draws no random number (mode
/// "mixup"'s probability is the caller's); nothing happens for p = 0 or a sample without outlines.
void copy_paste(Labelled& sample, double p, const Labelled* source = nullptr);

/// Ultralytics' box_candidates: keeps boxes wider and taller than wh_thr px, with area ratio
/// (after / before) above area_thr and aspect ratio below ar_thr.
bool box_candidate(const PixelBox& before, const PixelBox& after, double wh_thr = 2, double ar_thr = 100,
                   double area_thr = 0.1);

}  // namespace yolotrain::data
