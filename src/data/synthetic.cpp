// The synthetic "shapes" dataset: coloured shapes on textured backgrounds, a function of the seed.
#include "yolotrain/data/synthetic.hpp"

#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <fstream>

#include "opencv_view.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/data/rng.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data {
namespace {

const char* const kNames[] = {"rectangle", "ellipse", "triangle", "cross"};
constexpr int kClasses = 4;

cv::Scalar random_colour(Rng& rng) {
  return cv::Scalar(double(rng.below(256)), double(rng.below(256)), double(rng.below(256)));
}

/// A gradient plus stripes plus per-pixel noise.
void draw_background(Image& image, Rng& rng) {
  const cv::Scalar a = random_colour(rng), b = random_colour(rng);
  const int n = image.width;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < n; ++x) {
      const double t = (double(x) + y) / (n + image.height);
      std::uint8_t* p = image.pixel(y, x);
      for (int c = 0; c < 3; ++c) p[c] = static_cast<std::uint8_t>(a[c] * (1 - t) + b[c] * t);
    }
  cv::Mat m = detail::view(image);
  const int lines = 4 + static_cast<int>(rng.below(12));
  for (int i = 0; i < lines; ++i) {
    const cv::Point p1(int(rng.below(n)), int(rng.below(image.height)));
    const cv::Point p2(int(rng.below(n)), int(rng.below(image.height)));
    cv::line(m, p1, p2, random_colour(rng), 1 + int(rng.below(3)), cv::LINE_AA);
  }
  for (auto& v : image.pixels) v = static_cast<std::uint8_t>(std::clamp<int>(v + int(rng.below(21)) - 10, 0, 255));
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

std::string make_image(const fs::path& jpg, const ShapesOptions& o, Rng& rng) {
  const int s = o.imgsz;
  Image image(s, s);
  draw_background(image, rng);
  cv::Mat m = detail::view(image);
  std::string labels;
  const int n = 1 + static_cast<int>(rng.below(6));
  for (int i = 0; i < n; ++i) {
    const int cls = static_cast<int>(rng.below(kClasses));
    const int w = static_cast<int>(s * rng.uniform(0.08, 0.5)), h = static_cast<int>(s * rng.uniform(0.08, 0.5));
    const int x = static_cast<int>(rng.uniform(-0.1 * w, s - 0.9 * w)), y = static_cast<int>(rng.uniform(-0.1 * h, s - 0.9 * h));
    draw_shape(m, cls, cv::Rect(x, y, w, h), random_colour(rng));
    const cv::Rect vis = cv::Rect(x, y, w, h) & cv::Rect(0, 0, s, s);
    char line[96];
    std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", cls, (vis.x + vis.width / 2.0) / s,
                  (vis.y + vis.height / 2.0) / s, double(vis.width) / s, double(vis.height) / s);
    labels += line;
  }
  write_bytes(jpg, encode_jpeg(image, o.quality));
  return labels;
}

void write_split(const fs::path& out, const std::string& split, int count, const ShapesOptions& o) {
  fs::create_directories(out / "images" / split);
  fs::create_directories(out / "labels" / split);
  for (int i = 0; i < count; ++i) {
    Rng rng(o.seed, split == "train" ? 0 : 1, static_cast<std::uint64_t>(i));
    char name[32];
    std::snprintf(name, sizeof name, "%06d", i);
    const std::string labels = make_image(out / "images" / split / (std::string(name) + ".jpg"), o, rng);
    std::ofstream(out / "labels" / split / (std::string(name) + ".txt"), std::ios::binary) << labels;
  }
}

}  // namespace

const char* const* shapes_class_names(int* count) {
  if (count) *count = kClasses;
  return kNames;
}

fs::path write_shapes_dataset(const fs::path& out, const ShapesOptions& o) {
  if (o.imgsz < 32 || o.train < 1 || o.val < 1) throw Error("shapes dataset: need imgsz >= 32 and train, val >= 1");
  write_split(out, "train", o.train, o);
  write_split(out, "val", o.val, o);
  const fs::path yaml = out / "data.yaml";
  std::ofstream y(yaml, std::ios::binary | std::ios::trunc);
  y << "# Synthetic shapes dataset written by yolotrain (seed " << o.seed << ").\n"
    << "path: .\ntrain: images/train\nval: images/val\nnc: " << kClasses << "\nnames:\n";
  for (int i = 0; i < kClasses; ++i) y << "  " << i << ": " << kNames[i] << "\n";
  if (!y) throw Error(yaml.string() + ": cannot write");
  return yaml;
}

}  // namespace yolotrain::data
