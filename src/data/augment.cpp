// Ultralytics' augmentations on OpenCV imgproc: resize, letterbox, mosaic, perspective, HSV, flips, mixup.
#include "yolotrain/data/augment.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "augment_into.hpp"
#include "opencv_view.hpp"
#include "yolotrain/data/segments.hpp"

namespace yolotrain::data {
namespace {

using detail::expect_written;
using detail::output;
using detail::view;

constexpr double kPi = 3.14159265358979323846;

// Outlines as Ultralytics' Instances.scale then add_padding: float32 products, then float32 sums.
void scale_boxes(std::vector<PixelBox>& boxes, double sx, double sy, double dx = 0, double dy = 0) {
  for (auto& b : boxes) {
    b.x1 = static_cast<float>(b.x1 * sx + dx), b.x2 = static_cast<float>(b.x2 * sx + dx);
    b.y1 = static_cast<float>(b.y1 * sy + dy), b.y2 = static_cast<float>(b.y2 * sy + dy);
    for (size_t i = 0; i < b.segment.size(); i += 2) {
      b.segment[i] = b.segment[i] * static_cast<float>(sx) + static_cast<float>(dx);
      b.segment[i + 1] = b.segment[i + 1] * static_cast<float>(sy) + static_cast<float>(dy);
    }
    for (size_t i = 0; i < b.keypoints.size(); i += 3) {
      b.keypoints[i] = b.keypoints[i] * static_cast<float>(sx) + static_cast<float>(dx);
      b.keypoints[i + 1] = b.keypoints[i + 1] * static_cast<float>(sy) + static_cast<float>(dy);
    }
  }
}

// Instances.clip for keypoints: those outside [0, w] x [0, h] become invisible, then all are
// clipped to it.
void clip_keypoints(std::vector<float>& k, float w, float h) {
  for (size_t i = 0; i < k.size(); i += 3) {
    if (k[i] < 0 || k[i] > w || k[i + 1] < 0 || k[i + 1] > h) k[i + 2] = 0.f;
    k[i] = std::clamp(k[i], 0.f, w), k[i + 1] = std::clamp(k[i + 1], 0.f, h);
  }
}

// RandomPerspective.apply_keypoints (xy @ M.T, / z), then Instances.clip to (w, h).
std::vector<float> warp_keypoints(const std::vector<float>& k, const cv::Matx33d& M, int w, int h) {
  std::vector<float> out(k.size());
  for (size_t i = 0; i < k.size(); i += 3) {
    const double x = k[i], y = k[i + 1];
    const double z = M(2, 0) * x + M(2, 1) * y + M(2, 2);
    out[i] = static_cast<float>((M(0, 0) * x + M(0, 1) * y + M(0, 2)) / z);
    out[i + 1] = static_cast<float>((M(1, 0) * x + M(1, 1) * y + M(1, 2)) / z);
    out[i + 2] = k[i + 2];
  }
  clip_keypoints(out, static_cast<float>(w), static_cast<float>(h));
  return out;
}

// RandomFlip: keypoint j takes what keypoint flip_idx[j] was (keypoints[:, flip_idx]).
void reorder_keypoints(std::vector<float>& k, const std::vector<int>& flip_idx) {
  if (flip_idx.empty() || k.empty()) return;
  const std::vector<float> was = k;
  for (size_t j = 0; j < flip_idx.size() && 3 * j < k.size(); ++j) {
    const auto from = 3 * static_cast<std::ptrdiff_t>(flip_idx[j]), to = 3 * static_cast<std::ptrdiff_t>(j);
    std::copy_n(was.begin() + from, 3, k.begin() + to);
  }
}

// RandomPerspective.apply_segments + Instances.clip for one outline: transformed in float64
// (xy @ M.T, then / z), its box from segment_box, the points clipped to the box and to (w, h).
PixelBox warp_segment(const PixelBox& b, const cv::Matx33d& M, int w, int h) {
  std::vector<double> xy(b.segment.size());
  for (size_t i = 0; i < xy.size(); i += 2) {
    const double x = b.segment[i], y = b.segment[i + 1];
    const double z = M(2, 0) * x + M(2, 1) * y + M(2, 2);
    xy[i] = (M(0, 0) * x + M(0, 1) * y + M(0, 2)) / z;
    xy[i + 1] = (M(1, 0) * x + M(1, 1) * y + M(1, 2)) / z;
  }
  const auto box = segment_box(xy, w, h);
  PixelBox out;
  out.cls = b.cls;
  const double lo[2] = {std::clamp(box[0], 0.0, double(w)), std::clamp(box[1], 0.0, double(h))};
  const double hi[2] = {std::clamp(box[2], 0.0, double(w)), std::clamp(box[3], 0.0, double(h))};
  out.x1 = static_cast<float>(lo[0]), out.y1 = static_cast<float>(lo[1]);
  out.x2 = static_cast<float>(hi[0]), out.y2 = static_cast<float>(hi[1]);
  out.segment.resize(xy.size());
  for (size_t i = 0; i < xy.size(); ++i) {
    const int a = static_cast<int>(i % 2);
    const double v = std::clamp(std::clamp(xy[i], box[a], box[a + 2]), 0.0, a == 0 ? double(w) : double(h));
    out.segment[i] = static_cast<float>(v);
  }
  return out;
}

Image resized(const Image& img, int w, int h, int interp) {
  Image out;
  cv::Mat dst = output(out, h, w);
  cv::resize(view(img), dst, cv::Size(w, h), 0, 0, interp);
  expect_written(dst, out);
  return out;
}

/// Transforms box corners by M (3x3), taking the min/max of the 4 corners, clipped to (w, h).
PixelBox warp_box(const PixelBox& b, const cv::Matx33d& M, bool perspective, int w, int h) {
  const double xs[4] = {b.x1, b.x2, b.x1, b.x2}, ys[4] = {b.y1, b.y2, b.y2, b.y1};
  double x1 = 1e300, y1 = 1e300, x2 = -1e300, y2 = -1e300;
  for (int i = 0; i < 4; ++i) {
    double x = M(0, 0) * xs[i] + M(0, 1) * ys[i] + M(0, 2);
    double y = M(1, 0) * xs[i] + M(1, 1) * ys[i] + M(1, 2);
    if (perspective) {
      const double z = M(2, 0) * xs[i] + M(2, 1) * ys[i] + M(2, 2);
      x /= z, y /= z;
    }
    x1 = std::min(x1, x), y1 = std::min(y1, y), x2 = std::max(x2, x), y2 = std::max(y2, y);
  }
  PixelBox out{b.cls, static_cast<float>(std::clamp(x1, 0.0, double(w))),
               static_cast<float>(std::clamp(y1, 0.0, double(h))), static_cast<float>(std::clamp(x2, 0.0, double(w))),
               static_cast<float>(std::clamp(y2, 0.0, double(h))), {}, {}};
  return out;
}

}  // namespace

void resize_long_side(Labelled& s, int imgsz) {
  const int h0 = s.image.height, w0 = s.image.width;
  const double r = static_cast<double>(imgsz) / std::max(h0, w0);
  if (r == 1.0) return;
  const int w = std::min(static_cast<int>(std::ceil(w0 * r)), imgsz);
  const int h = std::min(static_cast<int>(std::ceil(h0 * r)), imgsz);
  s.image = resized(s.image, w, h, cv::INTER_LINEAR);
  scale_boxes(s.boxes, static_cast<double>(w) / w0, static_cast<double>(h) / h0);
}

bool has_outlines(const std::vector<PixelBox>& boxes) {
  return std::any_of(boxes.begin(), boxes.end(), [](const PixelBox& b) { return !b.segment.empty(); });
}

LetterboxInfo letterbox(Labelled& s, int new_h, int new_w, bool auto_pad, bool scaleup, int stride) {
  const int h = s.image.height, w = s.image.width;
  double r = std::min(static_cast<double>(new_h) / h, static_cast<double>(new_w) / w);
  if (!scaleup) r = std::min(r, 1.0);
  // Python's round (half to even), as Ultralytics' new_unpad: 481 px at r 0.5 -> 240, not 241.
  const int uw = static_cast<int>(std::nearbyint(w * r)), uh = static_cast<int>(std::nearbyint(h * r));
  double dw = new_w - uw, dh = new_h - uh;
  if (auto_pad) dw = std::fmod(dw, stride), dh = std::fmod(dh, stride);
  dw /= 2, dh /= 2;
  if (uw != w || uh != h) s.image = resized(s.image, uw, uh, cv::INTER_LINEAR);
  // Python's round (half to even) as Ultralytics: round(dh - 0.1), round(dh + 0.1).
  auto pyround = [](double v) { return static_cast<int>(std::nearbyint(v)); };
  const int top = pyround(dh - 0.1), bottom = pyround(dh + 0.1);
  const int left = pyround(dw - 0.1), right = pyround(dw + 0.1);
  Image padded;
  cv::Mat dst = output(padded, s.image.height + top + bottom, s.image.width + left + right);
  cv::copyMakeBorder(view(s.image), dst, top, bottom, left, right, cv::BORDER_CONSTANT,
                     cv::Scalar(114, 114, 114));
  expect_written(dst, padded);
  s.image = std::move(padded);
  LetterboxInfo info{static_cast<double>(uh) / h, static_cast<double>(uw) / w, double(left), double(top)};
  scale_boxes(s.boxes, info.ratio_w, info.ratio_h, left, top);
  return info;
}

namespace detail {

std::pair<int, int> mosaic_centre(int s, Rng& rng) {
  const int xc = static_cast<int>(rng.uniform(s / 2, 2 * s - s / 2));
  const int yc = static_cast<int>(rng.uniform(s / 2, 2 * s - s / 2));
  return {xc, yc};
}

void mosaic_canvas(Labelled& canvas, int s) {
  output(canvas.image, 2 * s, 2 * s);
  canvas.boxes.clear();
}

void mosaic_fill_rest(Labelled& canvas, const TileRect (&tiles)[4]) {
  const int width = canvas.image.width;
  for (int y = 0; y < canvas.image.height; ++y) {
    std::uint8_t* row = canvas.image.pixel(y, 0);
    int x = 0;  // tiles of one row, left to right: 0 then 1 above the centre, 2 then 3 below
    for (const TileRect& t : tiles) {
      if (t.w <= 0 || y < t.y || y >= t.y + t.h) continue;
      if (t.x > x) std::memset(row + 3 * x, 114, 3 * static_cast<std::size_t>(t.x - x));
      x = std::max(x, t.x + t.w);
    }
    if (x < width) std::memset(row + 3 * x, 114, 3 * static_cast<std::size_t>(width - x));
  }
}

TileRect mosaic_place(Labelled& canvas, const Image& img, const std::vector<PixelBox>& boxes, int i,
                      std::pair<int, int> centre, int s) {
  const auto [xc, yc] = centre;
  const int h = img.height, w = img.width;
  int x1a, y1a, x2a, y2a, x1b, y1b, x2b, y2b;
  if (i == 0) {
    x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
    x1b = w - (x2a - x1a), y1b = h - (y2a - y1a), x2b = w, y2b = h;
  } else if (i == 1) {
    x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, 2 * s), y2a = yc;
    x1b = 0, y1b = h - (y2a - y1a), x2b = std::min(w, x2a - x1a), y2b = h;
  } else if (i == 2) {
    x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(2 * s, yc + h);
    x1b = w - (x2a - x1a), y1b = 0, x2b = w, y2b = std::min(y2a - y1a, h);
  } else {
    x1a = xc, y1a = yc, x2a = std::min(xc + w, 2 * s), y2a = std::min(2 * s, yc + h);
    x1b = 0, y1b = 0, x2b = std::min(w, x2a - x1a), y2b = std::min(y2a - y1a, h);
  }
  TileRect placed;
  if (x2a > x1a && y2a > y1a) {
    cv::Mat tile = view(canvas.image)(cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a));
    view(img)(cv::Rect(x1b, y1b, x2b - x1b, y2b - y1b)).copyTo(tile);
    placed = {x1a, y1a, x2a - x1a, y2a - y1a};
  }
  const int padw = x1a - x1b, padh = y1a - y1b;
  for (const PixelBox& from : boxes) {
    PixelBox b;
    b.cls = from.cls;
    b.x1 = std::clamp(from.x1 + padw, 0.f, 2.f * s), b.x2 = std::clamp(from.x2 + padw, 0.f, 2.f * s);
    b.y1 = std::clamp(from.y1 + padh, 0.f, 2.f * s), b.y2 = std::clamp(from.y2 + padh, 0.f, 2.f * s);
    if ((b.x2 - b.x1) * (b.y2 - b.y1) <= 0) continue;
    b.segment.resize(from.segment.size());  // add_padding, then the mosaic's clip
    for (size_t k = 0; k < from.segment.size(); k += 2) {
      b.segment[k] = std::clamp(from.segment[k] + static_cast<float>(padw), 0.f, 2.f * s);
      b.segment[k + 1] = std::clamp(from.segment[k + 1] + static_cast<float>(padh), 0.f, 2.f * s);
    }
    b.keypoints = from.keypoints;  // add_padding, then the mosaic's clip
    for (size_t k = 0; k < b.keypoints.size(); k += 3) b.keypoints[k] += padw, b.keypoints[k + 1] += padh;
    clip_keypoints(b.keypoints, 2.f * s, 2.f * s);
    canvas.boxes.push_back(std::move(b));
  }
  return placed;
}

}  // namespace detail

Labelled mosaic4(const std::vector<Labelled>& four, int s, Rng& rng) {
  const auto centre = detail::mosaic_centre(s, rng);
  Labelled out;
  detail::mosaic_canvas(out, s);
  detail::TileRect tiles[4];
  for (int i = 0; i < 4; ++i) tiles[i] = detail::mosaic_place(out, four[i].image, four[i].boxes, i, centre, s);
  detail::mosaic_fill_rest(out, tiles);
  return out;
}

bool box_candidate(const PixelBox& a, const PixelBox& b, double wh_thr, double ar_thr, double area_thr) {
  const double w1 = a.x2 - a.x1, h1 = a.y2 - a.y1, w2 = b.x2 - b.x1, h2 = b.y2 - b.y1;
  const double eps = 1e-16;
  const double ar = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
  return w2 > wh_thr && h2 > wh_thr && w2 * h2 / (w1 * h1 + eps) > area_thr && ar < ar_thr;
}

void detail::random_perspective_into(const Labelled& s, Labelled& out, const AugmentConfig& cfg, Rng& rng,
                                     int border) {
  const int height = s.image.height + border * 2, width = s.image.width + border * 2;
  cv::Matx33d C = cv::Matx33d::eye(), P = cv::Matx33d::eye(), R = cv::Matx33d::eye(), S = cv::Matx33d::eye(),
              T = cv::Matx33d::eye();
  C(0, 2) = -s.image.width / 2.0, C(1, 2) = -s.image.height / 2.0;
  P(2, 0) = rng.uniform(-cfg.perspective, cfg.perspective);
  P(2, 1) = rng.uniform(-cfg.perspective, cfg.perspective);
  const double a = rng.uniform(-cfg.degrees, cfg.degrees);
  const double sc = rng.uniform(1 - cfg.scale, 1 + cfg.scale);
  const cv::Mat rot = cv::getRotationMatrix2D(cv::Point2f(0, 0), a, sc);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) R(r, c) = rot.at<double>(r, c);
  S(0, 1) = std::tan(rng.uniform(-cfg.shear, cfg.shear) * kPi / 180);
  S(1, 0) = std::tan(rng.uniform(-cfg.shear, cfg.shear) * kPi / 180);
  T(0, 2) = rng.uniform(0.5 - cfg.translate, 0.5 + cfg.translate) * width;
  T(1, 2) = rng.uniform(0.5 - cfg.translate, 0.5 + cfg.translate) * height;
  const cv::Matx33d M = T * S * R * P * C;
  const bool perspective = cfg.perspective != 0;
  if (border != 0 || M != cv::Matx33d::eye()) {
    cv::Mat dst = output(out.image, height, width);
    if (perspective)
      cv::warpPerspective(view(s.image), dst, cv::Mat(M), cv::Size(width, height), cv::INTER_LINEAR,
                          cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
    else
      cv::warpAffine(view(s.image), dst, cv::Mat(M).rowRange(0, 2), cv::Size(width, height), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
    expect_written(dst, out.image);
  } else {
    out.image = s.image;
  }
  out.boxes.clear();
  // Ultralytics: with polygon labels the boxes come from the outlines, and a box may keep as
  // little as 1 % of its area.
  const bool outlines = has_outlines(s.boxes);
  for (const auto& b : s.boxes) {
    PixelBox nb = b.segment.empty() ? warp_box(b, M, perspective, width, height) : warp_segment(b, M, width, height);
    nb.keypoints = warp_keypoints(b.keypoints, M, width, height);
    PixelBox before;  // Ultralytics compares against the boxes scaled by s
    before.cls = b.cls;
    before.x1 = b.x1 * static_cast<float>(sc), before.x2 = b.x2 * static_cast<float>(sc);
    before.y1 = b.y1 * static_cast<float>(sc), before.y2 = b.y2 * static_cast<float>(sc);
    if (box_candidate(before, nb, 2, 100, outlines ? 0.01 : 0.1)) out.boxes.push_back(std::move(nb));
  }
}

void random_perspective(Labelled& s, const AugmentConfig& cfg, Rng& rng, int border) {
  Labelled out;
  detail::random_perspective_into(s, out, cfg, rng, border);
  s = std::move(out);
}

namespace {

// numpy's float64 `%` (npy_divmod): fmod, moved into the divisor's sign.
double numpy_mod(double a, double b) {
  const double m = std::fmod(a, b);
  return m != 0 && ((b < 0) != (m < 0)) ? m + b : m;
}

}  // namespace

std::uint8_t hue_lut_entry(int x, double r, bool shift) {
  // 8.4 (data/augment.py:1500, since 8.3.79): ((x + r * 180) % 180); 8.3.78: ((x * (r + 1)) % 180).
  return static_cast<std::uint8_t>(shift ? numpy_mod(x + r * 180.0, 180.0) : std::fmod(x * (r + 1), 180.0));
}

void random_hsv(Image& image, const AugmentConfig& cfg, Rng& rng) {
  const double rh = rng.uniform(-1, 1) * cfg.hsv_h;
  const double rs = rng.uniform(-1, 1) * cfg.hsv_s + 1;
  const double rv = rng.uniform(-1, 1) * cfg.hsv_v + 1;
  if (cfg.hsv_h == 0 && cfg.hsv_s == 0 && cfg.hsv_v == 0) return;
  thread_local cv::Mat hsv;  // reused: one buffer per thread, not one per image
  cv::cvtColor(view(image), hsv, cv::COLOR_BGR2HSV);
  cv::Mat lut(1, 256, CV_8UC3);
  for (int x = 0; x < 256; ++x) {
    auto& v = lut.at<cv::Vec3b>(0, x);
    v[0] = hue_lut_entry(x, rh, cfg.hue_shift);
    v[1] = static_cast<std::uint8_t>(std::clamp(x * rs, 0.0, 255.0));
    v[2] = static_cast<std::uint8_t>(std::clamp(x * rv, 0.0, 255.0));
  }
  cv::LUT(hsv, lut, hsv);
  cv::Mat dst = view(image);
  cv::cvtColor(hsv, dst, cv::COLOR_HSV2BGR);
}

void random_flip(Labelled& s, const AugmentConfig& cfg, Rng& rng) {
  const float w = static_cast<float>(s.image.width), h = static_cast<float>(s.image.height);
  if (rng.uniform() < cfg.flipud) {
    cv::Mat pixels = view(s.image);
    cv::flip(pixels, pixels, 0);  // in place
    for (auto& b : s.boxes) {
      const float y1 = h - b.y2, y2 = h - b.y1;
      b.y1 = y1, b.y2 = y2;
      for (size_t k = 1; k < b.segment.size(); k += 2) b.segment[k] = h - b.segment[k];
      for (size_t k = 1; k < b.keypoints.size(); k += 3) b.keypoints[k] = h - b.keypoints[k];
      reorder_keypoints(b.keypoints, cfg.flip_idx);
    }
  }
  if (rng.uniform() < cfg.fliplr) {
    cv::Mat pixels = view(s.image);
    cv::flip(pixels, pixels, 1);  // in place
    for (auto& b : s.boxes) {
      const float x1 = w - b.x2, x2 = w - b.x1;
      b.x1 = x1, b.x2 = x2;
      for (size_t k = 0; k < b.segment.size(); k += 2) b.segment[k] = w - b.segment[k];
      for (size_t k = 0; k < b.keypoints.size(); k += 3) b.keypoints[k] = w - b.keypoints[k];
      reorder_keypoints(b.keypoints, cfg.flip_idx);
    }
  }
}

void mixup(Labelled& a, const Labelled& b, Rng& rng) {
  const double r = rng.beta(32.0, 32.0);
  cv::Mat dst = view(a.image);
  cv::addWeighted(view(a.image), r, view(b.image), 1 - r, 0.0, dst);
  a.boxes.insert(a.boxes.end(), b.boxes.begin(), b.boxes.end());
}

namespace {

// A CutMix rectangle (CutMix._rand_bbox): integer corners, as numpy computes them.
PixelBox cut_rectangle(int w, int h, Rng& rng) {
  const double cut_ratio = std::sqrt(1.0 - rng.beta(1.0, 1.0));
  const int cut_w = static_cast<int>(w * cut_ratio), cut_h = static_cast<int>(h * cut_ratio);
  const int cx = static_cast<int>(rng.below(static_cast<std::uint64_t>(w)));
  const int cy = static_cast<int>(rng.below(static_cast<std::uint64_t>(h)));
  PixelBox r;
  r.x1 = float(std::clamp(cx - cut_w / 2, 0, w)), r.y1 = float(std::clamp(cy - cut_h / 2, 0, h));
  r.x2 = float(std::clamp(cx + cut_w / 2, 0, w)), r.y2 = float(std::clamp(cy + cut_h / 2, 0, h));
  return r;
}

// Instances.clip into the rectangle (shifted to it, clipped to its size, shifted back).
PixelBox clipped_to(PixelBox b, const PixelBox& r) {
  const auto x = [&](float v) { return std::clamp(v, r.x1, r.x2); };
  const auto y = [&](float v) { return std::clamp(v, r.y1, r.y2); };
  b.x1 = x(b.x1), b.x2 = x(b.x2), b.y1 = y(b.y1), b.y2 = y(b.y2);
  for (std::size_t k = 0; k + 1 < b.segment.size(); k += 2) {
    b.segment[k] = x(b.segment[k]);
    b.segment[k + 1] = y(b.segment[k + 1]);
  }
  for (std::size_t k = 0; k + 2 < b.keypoints.size(); k += 3) b.keypoints[k] -= r.x1, b.keypoints[k + 1] -= r.y1;
  clip_keypoints(b.keypoints, r.x2 - r.x1, r.y2 - r.y1);
  for (std::size_t k = 0; k + 2 < b.keypoints.size(); k += 3) b.keypoints[k] += r.x1, b.keypoints[k + 1] += r.y1;
  return b;
}

}  // namespace

bool cutmix(Labelled& a, const Labelled& b, Rng& rng) {
  const int w = a.image.width, h = a.image.height;
  std::vector<PixelBox> free;
  for (int k = 0; k < 3; ++k) {
    const PixelBox r = cut_rectangle(w, h, rng);
    float covered = 0;
    for (const PixelBox& box : a.boxes) covered += detail::bbox_ioa(r, box);
    if (covered <= 0) free.push_back(r);
  }
  if (free.empty()) return false;
  const PixelBox area = free[rng.below(free.size())];
  const float least = has_outlines(a.boxes) ? 0.01f : 0.1f;  // Ultralytics asks the sample's own labels
  std::vector<PixelBox> taken;
  for (const PixelBox& box : b.boxes) {
    if (detail::bbox_ioa(area, box) >= least) taken.push_back(clipped_to(box, area));
  }
  if (taken.empty()) return false;
  if (area.x2 > area.x1 && area.y2 > area.y1) {
    const cv::Rect rect(int(area.x1), int(area.y1), int(area.x2 - area.x1), int(area.y2 - area.y1));
    cv::Mat dst = view(a.image)(rect);
    view(b.image)(rect).copyTo(dst);
  }
  a.boxes.insert(a.boxes.end(), taken.begin(), taken.end());
  return true;
}

}  // namespace yolotrain::data
