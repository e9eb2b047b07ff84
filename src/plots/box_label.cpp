#include "yolotrain/plots/box_label.hpp"

#include <opencv2/imgproc.hpp>

#include <cmath>

#include <algorithm>
#include <cstdio>

namespace yolotrain::plots {

namespace {

// Ultralytics' utils.plotting.Colors (8.2.36 and later), RGB hex.
const char* const kPalette[] = {"042AFF", "0BDBEB", "F3F3F3", "00DFB7", "111F68", "FF6FDD", "FF444F",
                                "CCED00", "00F344", "BD00FF", "00B4FF", "DD00BA", "00FFFF", "26C000",
                                "01FFB3", "7D24FF", "7B0068", "FF1B6C", "FC6D2F", "A2FF0B"};
// Annotator.get_txt_color: dark text (#111F68) on the palette's light colours, white elsewhere.
constexpr bool kDarkText[20] = {false, true, true, true, false, true, false, true, true, false,
                                false, false, true, false, true, false, false, false, false, true};

std::int64_t palette_index(std::int64_t cls) { return ((cls % 20) + 20) % 20; }

}  // namespace

std::array<std::uint8_t, 3> class_color(std::int64_t cls) {
  unsigned r = 0, g = 0, b = 0;
  std::sscanf(kPalette[palette_index(cls)], "%2x%2x%2x", &r, &g, &b);
  return {static_cast<std::uint8_t>(b), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(r)};
}

std::array<std::uint8_t, 3> label_text_color(std::int64_t cls) {
  if (kDarkText[palette_index(cls)]) return {104, 31, 17};
  return {255, 255, 255};
}

namespace {

// box_label's label: a filled box of the class colour at p1 (above it when there is room, kept inside
// the right edge) with the text on it.
void draw_label_at(cv::Mat& im, cv::Point p1, const std::string& label, std::int64_t cls, int lw) {
  if (label.empty()) return;
  const auto c = class_color(cls), t = label_text_color(cls);
  const cv::Scalar color(c[0], c[1], c[2]), text_color(t[0], t[1], t[2]);
  const int tf = std::max(lw - 1, 1);  // font thickness
  const double sf = lw / 3.0;          // font scale
  int baseline = 0;
  const cv::Size text = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, sf, tf, &baseline);
  const int w = text.width, h = text.height + 3;
  const bool outside = p1.y >= h;
  if (p1.x > im.cols - w) p1.x = im.cols - w;
  const cv::Point q(p1.x + w, outside ? p1.y - h : p1.y + h);
  cv::rectangle(im, p1, q, color, -1, cv::LINE_AA);
  cv::putText(im, label, cv::Point(p1.x, outside ? p1.y - 2 : p1.y + h - 1), cv::FONT_HERSHEY_SIMPLEX, sf, text_color,
              tf, cv::LINE_AA);
}

}  // namespace

void draw_box_label(data::Image& image, float x1, float y1, float x2, float y2, const std::string& label,
                    std::int64_t cls, int line_width) {
  if (image.empty()) return;
  cv::Mat im(image.height, image.width, CV_8UC3, image.pixels.data());
  const int lw = std::max(line_width, 1);
  const auto c = class_color(cls);
  const cv::Point p1(static_cast<int>(x1), static_cast<int>(y1));
  cv::rectangle(im, p1, cv::Point(static_cast<int>(x2), static_cast<int>(y2)), cv::Scalar(c[0], c[1], c[2]), lw,
                cv::LINE_AA);
  draw_label_at(im, p1, label, cls, lw);
}

void draw_polygon_label(data::Image& image, const std::vector<std::array<int, 2>>& corners, const std::string& label,
                        std::int64_t cls, int line_width) {
  if (image.empty() || corners.empty()) return;
  cv::Mat im(image.height, image.width, CV_8UC3, image.pixels.data());
  const int lw = std::max(line_width, 1);
  const auto c = class_color(cls);
  std::vector<cv::Point> points;
  for (const auto& p : corners) points.emplace_back(p[0], p[1]);
  cv::polylines(im, std::vector<std::vector<cv::Point>>{points}, true, cv::Scalar(c[0], c[1], c[2]), lw);
  draw_label_at(im, points[0], label, cls, lw);
}

void draw_text_lines(data::Image& image, const std::vector<std::string>& lines) {
  if (image.empty()) return;
  cv::Mat im(image.height, image.width, CV_8UC3, image.pixels.data());
  const int size = std::max(static_cast<int>(std::nearbyint((image.height + image.width) / 2.0 * 0.035)), 12);
  const double sf = cv::getFontScaleFromHeight(cv::FONT_HERSHEY_SIMPLEX, size);
  const int tf = std::max(1, size / 12);
  const int x = static_cast<int>(std::nearbyint(image.height * 0.03));
  int y = x;
  for (const std::string& line : lines) {
    int baseline = 0;
    const cv::Size t = cv::getTextSize(line, cv::FONT_HERSHEY_SIMPLEX, sf, tf, &baseline);
    const int h = t.height + baseline;
    cv::rectangle(im, cv::Rect(x, y, t.width + 2, h + 2), cv::Scalar(64, 64, 64), cv::FILLED);
    cv::putText(im, line, cv::Point(x + 1, y + 1 + t.height), cv::FONT_HERSHEY_SIMPLEX, sf, cv::Scalar(255, 255, 255),
                tf, cv::LINE_AA);
    y += h + 2;
  }
}

}  // namespace yolotrain::plots
