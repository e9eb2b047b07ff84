// The synthetic "shapes" dataset: vivid shapes, apart, on plain gradients; a function of the seed.
#include "yolotrain/data/synthetic.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "opencv_view.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/data/rng.hpp"
#include "yolotrain/data/sample_source.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data {
namespace {

const char* const kNames[] = {"rectangle", "ellipse", "triangle", "cross"};
constexpr int kClasses = 4;
const char* const kKeypointNames[kShapesKeypoints] = {"centre", "top", "bottom", "left", "right"};
const int kFlipIdx[kShapesKeypoints] = {0, 1, 2, 4, 3};  // a left-right flip swaps left and right

/// A muted colour for the background: grey with a faint tint.
cv::Scalar muted_colour(Rng& rng) {
  const double grey = rng.uniform(60, 200);
  return cv::Scalar(grey + rng.uniform(-20, 20), grey + rng.uniform(-20, 20), grey + rng.uniform(-20, 20));
}

/// A vivid colour for a shape: a random hue at high saturation and value (HSV to RGB).
cv::Scalar vivid_colour(Rng& rng) {
  const double h = rng.uniform(0, 6), s = rng.uniform(0.65, 1.0), v = rng.uniform(180, 255);
  const double f = h - std::floor(h), p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (static_cast<int>(h)) {
    case 0: return cv::Scalar(v, t, p);
    case 1: return cv::Scalar(q, v, p);
    case 2: return cv::Scalar(p, v, t);
    case 3: return cv::Scalar(p, q, v);
    case 4: return cv::Scalar(t, p, v);
    default: return cv::Scalar(v, p, q);
  }
}

/// A gentle gradient between two muted colours, with light per-pixel noise.
void draw_background(Image& image, Rng& rng) {
  const cv::Scalar a = muted_colour(rng), b = muted_colour(rng);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) {
      const double t = (double(x) + y) / (image.width + image.height);
      std::uint8_t* p = image.pixel(y, x);
      for (int c = 0; c < 3; ++c) p[c] = static_cast<std::uint8_t>(std::clamp(a[c] * (1 - t) + b[c] * t, 0.0, 255.0));
    }
  for (auto& v : image.pixels) v = static_cast<std::uint8_t>(std::clamp<int>(v + int(rng.below(13)) - 6, 0, 255));
}

/// Draws one shape of class `cls` inside `box` (may reach past the image edge).
void draw_shape(cv::Mat& m, int cls, const cv::Rect& box, const cv::Scalar& colour) {
  const cv::Point c(box.x + box.width / 2, box.y + box.height / 2);
  switch (cls) {
    case 0: cv::rectangle(m, box, colour, cv::FILLED); break;
    case 1: cv::ellipse(m, c, cv::Size(box.width / 2, box.height / 2), 0, 0, 360, colour, cv::FILLED); break;
    case 2: {
      const std::vector<cv::Point> tri{{box.x, box.y + box.height - 1}, {box.x + box.width - 1, box.y + box.height - 1},
                                       {c.x, box.y}};
      cv::fillPoly(m, std::vector<std::vector<cv::Point>>{tri}, colour);
      break;
    }
    default: {
      const int tw = std::max(2, box.width / 3), th = std::max(2, box.height / 3);
      cv::rectangle(m, cv::Rect(c.x - tw / 2, box.y, tw, box.height), colour, cv::FILLED);
      cv::rectangle(m, cv::Rect(box.x, c.y - th / 2, box.width, th), colour, cv::FILLED);
    }
  }
}

/// The outline of a shape of class `cls` inside `box`, vertices rounded to 1/16 px (what fillPoly
/// draws with shift 4).
std::vector<cv::Point2d> shape_polygon(int cls, const cv::Rect& box) {
  const double x = box.x, y = box.y, w = box.width, h = box.height, cx = x + w / 2, cy = y + h / 2;
  std::vector<cv::Point2d> p;
  switch (cls) {
    case 0: p = {{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}}; break;
    case 1:
      for (int k = 0; k < 32; ++k) {
        const double a = 2 * 3.14159265358979323846 * k / 32;
        p.emplace_back(cx + w / 2 * std::cos(a), cy + h / 2 * std::sin(a));
      }
      break;
    case 2: p = {{x, y + h}, {x + w, y + h}, {cx, y}}; break;
    default: {
      const double tw = std::max(2.0, w / 3) / 2, th = std::max(2.0, h / 3) / 2;
      p = {{cx - tw, y},       {cx + tw, y},       {cx + tw, cy - th}, {x + w, cy - th},
           {x + w, cy + th},   {cx + tw, cy + th}, {cx + tw, y + h},   {cx - tw, y + h},
           {cx - tw, cy + th}, {x, cy + th},       {x, cy - th},       {cx - tw, cy - th}};
    }
  }
  for (auto& v : p) v = {std::round(v.x * 16) / 16, std::round(v.y * 16) / 16};
  return p;
}

/// The shapes-pose keypoints of a shape of class `cls` inside `box` (kKeypointNames' order), at
/// 1/16 px as its polygon: each lies on the outline shape_polygon() gives (the centre inside).
std::vector<cv::Point2d> shape_keypoints(int cls, const cv::Rect& box) {
  const double x = box.x, y = box.y, w = box.width, h = box.height, cx = x + w / 2, cy = y + h / 2;
  std::vector<cv::Point2d> p = {{cx, cy}, {cx, y}, {cx, y + h}, {x, cy}, {x + w, cy}};
  if (cls == 2) p[3] = {x, y + h}, p[4] = {x + w, y + h};  // the triangle: its base corners
  for (auto& v : p) v = {std::round(v.x * 16) / 16, std::round(v.y * 16) / 16};
  return p;
}

/// Fills the polygon exactly as its label describes it (vertices at 1/16 px, fillPoly shift 4).
void fill_polygon(cv::Mat& m, const std::vector<cv::Point2d>& polygon, const cv::Scalar& colour) {
  std::vector<cv::Point> fixed;
  for (const auto& v : polygon) fixed.emplace_back(static_cast<int>(v.x * 16), static_cast<int>(v.y * 16));
  cv::fillPoly(m, std::vector<std::vector<cv::Point>>{fixed}, colour, cv::LINE_8, 4);
}

/// A box of 18-45 % of the side in each direction, inside the image and clear of `taken` (a few
/// tries; an empty rectangle when none fits).
cv::Rect place_box(int side, const std::vector<cv::Rect>& taken, Rng& rng) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int w = static_cast<int>(side * rng.uniform(0.18, 0.45)),
              h = static_cast<int>(side * rng.uniform(0.18, 0.45));
    const cv::Rect box(static_cast<int>(rng.uniform(0, side - w)), static_cast<int>(rng.uniform(0, side - h)), w, h);
    const cv::Rect margin(box.x - 2, box.y - 2, box.width + 4, box.height + 4);
    if (std::none_of(taken.begin(), taken.end(), [&](const cv::Rect& t) { return (t & margin).area() > 0; }))
      return box;
  }
  return {};
}

/// `polygon` turned by `angle` (radians) around `centre`, at 1/16 px.
std::vector<cv::Point2d> turned(const std::vector<cv::Point2d>& polygon, cv::Point2d centre, double angle) {
  const double c = std::cos(angle), s = std::sin(angle);
  std::vector<cv::Point2d> out;
  for (const auto& v : polygon) {
    const double dx = v.x - centre.x, dy = v.y - centre.y;
    out.emplace_back(std::round((centre.x + dx * c - dy * s) * 16) / 16,
                     std::round((centre.y + dx * s + dy * c) * 16) / 16);
  }
  return out;
}

// One image of the set and its shapes (class, pixel rectangle, and the polygon it was filled from
// in the segmentation variant), drawn from `rng`.
struct Drawn {
  Image image;
  std::vector<std::pair<int, cv::Rect>> shapes;
  std::vector<std::vector<cv::Point2d>> polygons;
  std::vector<std::vector<cv::Point2d>> keypoints;  ///< the pose variant's
  std::vector<std::vector<cv::Point2d>> corners;    ///< the oriented variant's 4 corners per shape
};

// A drawn shape as YOLO's normalised x_center, y_center, width, height.
std::array<double, 4> normalized(const cv::Rect& box, double side) {
  return {(box.x + box.width / 2.0) / side, (box.y + box.height / 2.0) / side, box.width / side, box.height / side};
}

// The oriented variant: elongated shapes turned by a random angle, apart, inside the image; each
// shape's rectangle in `shapes` is its turned outline's upright bounds.
Drawn draw_oriented_image(const ShapesOptions& o, Rng& rng) {
  const int s = o.imgsz;
  Drawn d{Image(s, s), {}, {}, {}, {}};
  draw_background(d.image, rng);
  cv::Mat m = detail::view(d.image);
  std::vector<cv::Rect> taken;
  const int n = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < n; ++i) {
    const int cls = static_cast<int>(rng.below(kClasses));
    const double w = s * rng.uniform(0.24, 0.48), h = w * rng.uniform(0.45, 0.8), angle = rng.uniform(0, M_PI);
    const double bw = std::abs(w * std::cos(angle)) + std::abs(h * std::sin(angle));
    const double bh = std::abs(w * std::sin(angle)) + std::abs(h * std::cos(angle));
    for (int attempt = 0; attempt < 20; ++attempt) {
      const cv::Point2d c(rng.uniform(bw / 2 + 1, s - bw / 2 - 1), rng.uniform(bh / 2 + 1, s - bh / 2 - 1));
      const cv::Rect bounds(static_cast<int>(c.x - bw / 2) - 1, static_cast<int>(c.y - bh / 2) - 1,
                            static_cast<int>(bw) + 3, static_cast<int>(bh) + 3);
      if (std::any_of(taken.begin(), taken.end(), [&](const cv::Rect& t) { return (t & bounds).area() > 0; }))
        continue;
      taken.push_back(bounds);
      const cv::Rect upright(static_cast<int>(std::lround(c.x - w / 2)), static_cast<int>(std::lround(c.y - h / 2)),
                             static_cast<int>(std::lround(w)), static_cast<int>(std::lround(h)));
      const cv::Point2d centre(upright.x + upright.width / 2.0, upright.y + upright.height / 2.0);
      d.polygons.push_back(turned(shape_polygon(cls, upright), centre, angle));
      d.corners.push_back(turned(shape_polygon(0, upright), centre, angle));
      fill_polygon(m, d.polygons.back(), vivid_colour(rng));
      d.shapes.emplace_back(cls, bounds & cv::Rect(0, 0, s, s));
      break;
    }
  }
  return d;
}

Drawn draw_image(const ShapesOptions& o, Rng& rng) {
  if (o.oriented) return draw_oriented_image(o, rng);
  const int s = o.imgsz;
  Drawn d{Image(s, s), {}, {}, {}, {}};
  draw_background(d.image, rng);
  cv::Mat m = detail::view(d.image);
  std::vector<cv::Rect> taken;
  const int n = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < n; ++i) {
    const int cls = static_cast<int>(rng.below(kClasses));
    const cv::Rect box = place_box(s, taken, rng);
    if (box.empty()) continue;
    taken.push_back(box);
    if (o.segments || o.keypoints) {
      d.polygons.push_back(shape_polygon(cls, box));
      fill_polygon(m, d.polygons.back(), vivid_colour(rng));
      if (o.keypoints) d.keypoints.push_back(shape_keypoints(cls, box));
    } else {
      draw_shape(m, cls, box, vivid_colour(rng));
    }
    d.shapes.emplace_back(cls, box);
  }
  return d;
}

// The classification variant's image `index`: one shape of class index % 4, 40-90 % of the side.
Drawn draw_class_image(const ShapesOptions& o, int index, Rng& rng) {
  const int s = o.imgsz, cls = index % kClasses;
  Drawn d{Image(s, s), {}, {}, {}, {}};
  draw_background(d.image, rng);
  const int w = static_cast<int>(s * rng.uniform(0.4, 0.9)), h = static_cast<int>(s * rng.uniform(0.4, 0.9));
  const cv::Rect box(static_cast<int>(rng.uniform(0, s - w)), static_cast<int>(rng.uniform(0, s - h)), w, h);
  cv::Mat m = detail::view(d.image);
  fill_polygon(m, shape_polygon(cls, box), vivid_colour(rng));
  d.shapes.emplace_back(cls, box);
  return d;
}

// Writes the image as JPEG and returns its label file's text.
std::string make_image(const fs::path& jpg, const ShapesOptions& o, Rng& rng) {
  const Drawn d = draw_image(o, rng);
  std::string labels;
  for (size_t k = 0; k < d.shapes.size(); ++k) {
    const auto& [cls, box] = d.shapes[k];
    char line[96];
    if (o.segments || o.oriented) {  // class x1 y1 x2 y2 ..., normalized: the outline or the 4 corners
      labels += std::to_string(cls);
      for (const auto& v : o.oriented ? d.corners[k] : d.polygons[k]) {
        std::snprintf(line, sizeof line, " %.6f %.6f", v.x / o.imgsz, v.y / o.imgsz);
        labels += line;
      }
      labels += "\n";
      continue;
    }
    const auto [x, y, w, h] = normalized(box, o.imgsz);
    std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f", cls, x, y, w, h);
    labels += line;
    for (size_t j = 0; o.keypoints && j < d.keypoints[k].size(); ++j) {  // x y visible (COCO's 2)
      std::snprintf(line, sizeof line, " %.6f %.6f 2", d.keypoints[k][j].x / o.imgsz, d.keypoints[k][j].y / o.imgsz);
      labels += line;
    }
    labels += "\n";
  }
  write_bytes(jpg, encode_jpeg(d.image, o.quality));
  return labels;
}

Rng sample_rng(const ShapesOptions& o, const std::string& split, int index) {
  return Rng(o.seed, split == "train" ? 0 : 1, static_cast<std::uint64_t>(index));
}

void write_class_split(const fs::path& out, const std::string& split, int count, const ShapesOptions& o) {
  for (int i = 0; i < kClasses; ++i) fs::create_directories(out / split / kNames[i]);
  for (int i = 0; i < count; ++i) {
    Rng rng = sample_rng(o, split, i);
    char name[32];
    std::snprintf(name, sizeof name, "%06d.jpg", i);
    const Drawn d = draw_class_image(o, i, rng);
    write_bytes(out / split / kNames[i % kClasses] / name, encode_jpeg(d.image, o.quality));
  }
}

void write_split(const fs::path& out, const std::string& split, int count, const ShapesOptions& o) {
  fs::create_directories(out / "images" / split);
  fs::create_directories(out / "labels" / split);
  for (int i = 0; i < count; ++i) {
    Rng rng = sample_rng(o, split, i);
    char name[32];
    std::snprintf(name, sizeof name, "%06d", i);
    const std::string labels = make_image(out / "images" / split / (std::string(name) + ".jpg"), o, rng);
    std::ofstream(out / "labels" / split / (std::string(name) + ".txt"), std::ios::binary) << labels;
  }
}

// The pose variant's data.yaml keys (as Ultralytics' coco8-pose.yaml): kpt_shape, flip_idx, kpt_names.
void write_pose_keys(std::ostream& y) {
  y << "kpt_shape: [" << kShapesKeypoints << ", 3]\nflip_idx: [";
  for (int j = 0; j < kShapesKeypoints; ++j) y << (j ? ", " : "") << kFlipIdx[j];
  y << "]\nkpt_names:\n";
  for (int i = 0; i < kClasses; ++i) {
    y << "  " << i << ":\n";
    for (const char* name : kKeypointNames) y << "    - " << name << "\n";
  }
}

}  // namespace

ShapesOptions shapes_obb_options() {
  ShapesOptions o;
  o.oriented = true;
  return o;
}

ShapesOptions shapes_cls_options() {
  ShapesOptions o;
  o.classify = true;
  o.imgsz = 64;
  o.train = 512;
  o.val = 128;
  return o;
}

const int* shapes_flip_idx() { return kFlipIdx; }

const char* const* shapes_keypoint_names() { return kKeypointNames; }

const char* const* shapes_class_names(int* count) {
  if (count) *count = kClasses;
  return kNames;
}

Sample shapes_sample(const ShapesOptions& o, const std::string& split, int index) {
  Rng rng = sample_rng(o, split, index);
  Drawn d = draw_image(o, rng);
  Sample sample{std::move(d.image), {}};
  for (const auto& [cls, box] : d.shapes) {
    const auto [x, y, w, h] = normalized(box, o.imgsz);
    sample.boxes.push_back({cls, static_cast<float>(x), static_cast<float>(y), static_cast<float>(w),
                            static_cast<float>(h)});
  }
  return sample;
}

fs::path write_shapes_dataset(const fs::path& out, const ShapesOptions& o) {
  if (o.imgsz < 32 || o.train < 1 || o.val < 1) throw Error("shapes dataset: need imgsz >= 32 and train, val >= 1");
  if (int(o.segments) + int(o.keypoints) + int(o.classify) + int(o.oriented) > 1)
    throw Error("shapes dataset: one variant of polygons, keypoints, classes or oriented boxes, not several");
  if (o.classify) {
    write_class_split(out, "train", o.train, o);
    write_class_split(out, "val", o.val, o);
    return out;
  }
  write_split(out, "train", o.train, o);
  write_split(out, "val", o.val, o);
  const fs::path yaml = out / "data.yaml";
  std::ofstream y(yaml, std::ios::binary | std::ios::trunc);
  y << "# Synthetic shapes " << (o.segments ? "segmentation " : o.keypoints ? "pose " : o.oriented ? "OBB " : "")
    << "dataset written by yolotrain (seed " << o.seed << ").\n"
    << "path: .\ntrain: images/train\nval: images/val\nnc: " << kClasses << "\nnames:\n";
  for (int i = 0; i < kClasses; ++i) y << "  " << i << ": " << kNames[i] << "\n";
  if (o.keypoints) write_pose_keys(y);
  if (!y) throw Error(yaml.string() + ": cannot write");
  return yaml;
}

}  // namespace yolotrain::data
