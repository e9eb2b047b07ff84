#include "yolotrain/plots/plot_images.hpp"
#include "yolotrain/data/rotated_boxes.hpp"

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "chart.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/plots/box_label.hpp"
#include "yolotrain/plots/keypoints.hpp"

namespace yolotrain::plots {
namespace {

// The batch as uint8 HWC RGB images.
at::Tensor to_hwc_bytes(const at::Tensor& images) {
  at::Tensor x = images.detach().to(at::kCPU);
  if (x.scalar_type() != at::kByte) x = x.to(at::kFloat).mul(255).round_().clamp_(0, 255).to(at::kByte);
  return x.permute({0, 2, 3, 1}).contiguous();
}

std::string class_name(const std::vector<std::string>& names, std::int64_t c) {
  return c >= 0 && c < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(c)] : std::to_string(c);
}

}  // namespace

namespace {

// The masks of image `i`'s boxes (`boxes`: their rows in the plot), each [h, w] 0/1.
std::vector<at::Tensor> masks_of_image(const ImagesPlot& p, int i, const std::vector<std::int64_t>& boxes) {
  std::vector<at::Tensor> out;
  const at::Tensor m = p.masks.to(at::kCPU);
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    out.push_back(p.overlap_masks ? m[i].eq(static_cast<float>(k + 1)) : m[boxes[k]].gt(0));
  }
  return out;
}

// Ultralytics' plot_images mask step: the mask resized to the tile (cv2.resize of the uint8 0/1
// mask, bilinear), its pixels blended as image * 0.4 + colour * 0.6.
void blend_mask(data::Image& out, const at::Tensor& mask, const cv::Rect& tile, std::int64_t cls) {
  const at::Tensor bytes = mask.to(at::kByte).contiguous();
  cv::Mat m(static_cast<int>(bytes.size(0)), static_cast<int>(bytes.size(1)), CV_8UC1, bytes.data_ptr());
  cv::Mat resized;
  if (m.rows != tile.height || m.cols != tile.width) cv::resize(m, resized, tile.size());
  else resized = m;
  cv::Mat im(out.height, out.width, CV_8UC3, out.pixels.data());
  const std::array<std::uint8_t, 3> color = class_color(cls);
  for (int r = 0; r < tile.height && tile.y + r < out.height; ++r) {
    auto* px = im.ptr<std::uint8_t>(tile.y + r) + 3 * tile.x;
    const auto* mk = resized.ptr<std::uint8_t>(r);
    for (int c = 0; c < tile.width && tile.x + c < out.width; ++c) {
      if (!mk[c]) continue;
      for (int ch = 0; ch < 3; ++ch) {
        px[3 * c + ch] = static_cast<std::uint8_t>(px[3 * c + ch] * 0.4 + color[static_cast<std::size_t>(ch)] * 0.6);
      }
    }
  }
}

// The masks of tile `i`'s boxes (those drawn: every label, predictions above conf_thres).
void draw_masks(data::Image& out, const ImagesPlot& p, int i, const cv::Rect& tile, const at::Tensor& idx,
                const at::Tensor& cls, const at::Tensor& confs) {
  std::vector<std::int64_t> rows;
  for (std::int64_t j = 0; j < idx.size(0); ++j) {
    if (idx[j].item<std::int64_t>() == i) rows.push_back(j);
  }
  const std::vector<at::Tensor> masks = masks_of_image(p, i, rows);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (confs.defined() && !(confs[rows[k]].item<float>() > p.conf_thres)) continue;
    blend_mask(out, masks[k], tile, cls[rows[k]].item<std::int64_t>());
  }
}

}  // namespace

namespace {

// Tile `i`'s keypoints (plot_images' "Plot keypoints"): each drawn box's, scaled to the tile (from
// normalised, or by the mosaic's scale) and moved to it.
void draw_tile_keypoints(data::Image& out, const ImagesPlot& p, int i, const cv::Rect& tile, double scale,
                         const at::Tensor& idx, const at::Tensor& confs, int lw) {
  const at::Tensor rows = (idx == i).nonzero().reshape({-1});
  if (rows.numel() == 0) return;
  at::Tensor k = p.keypoints.to(at::kCPU, at::kFloat).index_select(0, rows).clone();
  if (k.select(-1, 0).max().item<float>() <= 1.01F || k.select(-1, 1).max().item<float>() <= 1.01F) {
    k.select(-1, 0).mul_(tile.width);
    k.select(-1, 1).mul_(tile.height);
  } else if (scale < 1) {
    k.slice(-1, 0, 2).mul_(scale);
  }
  k.select(-1, 0).add_(tile.x);
  k.select(-1, 1).add_(tile.y);
  for (std::int64_t j = 0; j < rows.numel(); ++j) {
    if (confs.defined() && !(confs[rows[j]].item<float>() > p.conf_thres)) continue;
    draw_keypoints(out, k[j], lw, lw, p.conf_thres);  // Annotator.kpts: radius = line width
  }
}

}  // namespace

namespace {

// Ultralytics' annotator.text(xy, name, txt_color=colors(c), box_color=(64, 64, 64, 128)): the class
// name in its colour on a dark grey box at the tile's top-left corner (drawn opaque here).
void draw_class_text(cv::Mat& im, std::int64_t c, const at::Tensor& conf, const ImagesPlot& p, cv::Point at, int fs) {
  std::string text = class_name(p.names, c);
  if (conf.defined()) {  // a prediction: "name 0.9" (Ultralytics' f"{c} {conf[0]:.1f}")
    char buf[16];
    std::snprintf(buf, sizeof buf, " %.1f", conf.item<double>());
    text += buf;
  }
  const double sf = std::max(fs / 30.0, 0.35);
  const int thickness = std::max(1, static_cast<int>(sf * 2));
  int baseline = 0;
  const cv::Size t = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, sf, thickness, &baseline);
  cv::rectangle(im, cv::Rect(at.x, at.y, t.width + 2, t.height + baseline + 2), cv::Scalar(64, 64, 64), cv::FILLED);
  const std::array<std::uint8_t, 3> colour = class_color(c);
  cv::putText(im, text, cv::Point(at.x + 1, at.y + 1 + t.height), cv::FONT_HERSHEY_SIMPLEX, sf,
              cv::Scalar(colour[0], colour[1], colour[2]), thickness, cv::LINE_AA);
}

}  // namespace

data::Image plot_images(const ImagesPlot& p) {
  if (!p.images.defined() || p.images.dim() != 4 || p.images.size(1) != 3) {
    throw Error("plot_images: images must be [B, 3, H, W]");
  }
  const at::Tensor hwc = to_hwc_bytes(p.images);
  const int bs = static_cast<int>(std::min<std::int64_t>(hwc.size(0), p.max_subplots));
  int h = static_cast<int>(hwc.size(1)), w = static_cast<int>(hwc.size(2));
  const int ns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(bs))));
  cv::Mat mosaic(ns * h, ns * w, CV_8UC3, cv::Scalar(255, 255, 255));
  for (int i = 0; i < bs; ++i) {
    const int x = w * (i / ns), y = h * (i % ns);  // column by column, as Ultralytics
    const cv::Mat rgb(h, w, CV_8UC3, hwc[i].data_ptr());
    cv::cvtColor(rgb, mosaic(cv::Rect(x, y, w, h)), cv::COLOR_RGB2BGR);
  }
  const double scale = static_cast<double>(p.max_size) / ns / std::max(h, w);
  if (scale < 1) {
    h = static_cast<int>(std::ceil(scale * h));
    w = static_cast<int>(std::ceil(scale * w));
    cv::resize(mosaic, mosaic, cv::Size(w * ns, h * ns));
  }
  data::Image out = detail::to_image(mosaic);
  cv::Mat im(out.height, out.width, CV_8UC3, out.pixels.data());

  const int fs = static_cast<int>((h + w) * ns * 0.01);  // Ultralytics' font size
  const int lw = std::max(static_cast<int>(std::nearbyint(fs / 10.0)), 1);
  const at::Tensor idx =
      p.batch_idx.defined() ? p.batch_idx.reshape({-1}).to(at::kLong).cpu() : at::zeros({0}, at::kLong);
  const at::Tensor cls = p.cls.defined() ? p.cls.reshape({-1}).to(at::kLong).cpu() : at::zeros({0}, at::kLong);
  const std::int64_t width = p.bboxes.defined() && p.bboxes.dim() == 2 && p.bboxes.size(1) == 5 ? 5 : 4;  // xywhr
  at::Tensor boxes =
      p.bboxes.defined() ? p.bboxes.reshape({-1, width}).to(at::kFloat).cpu().clone() : at::zeros({0, width});
  const bool classes_only = !p.bboxes.defined() && cls.size(0) > 0;  // classification: a class per image
  if ((!classes_only && boxes.size(0) != cls.size(0)) || idx.size(0) != cls.size(0))
    throw Error("plot_images: boxes, classes and indices disagree");
  const bool normalised = boxes.numel() == 0 || boxes.slice(1, 0, 4).max().item<float>() <= 1.1F;
  const at::Tensor confs = p.confs.defined() ? p.confs.reshape({-1}).to(at::kFloat).cpu() : at::Tensor();
  for (int i = 0; i < bs; ++i) {
    const int x = w * (i / ns), y = h * (i % ns);
    cv::rectangle(im, cv::Rect(x, y, w, h), cv::Scalar(255, 255, 255), 2);
    if (static_cast<std::size_t>(i) < p.paths.size()) {
      const std::string file =
          std::filesystem::path(p.paths[static_cast<std::size_t>(i)]).filename().string().substr(0, 40);
      const double sf = std::max(fs / 40.0, 0.3);
      int baseline = 0;
      const cv::Size t = cv::getTextSize(file, cv::FONT_HERSHEY_SIMPLEX, sf, std::max(lw - 1, 1), &baseline);
      cv::putText(im, file, cv::Point(x + 5, y + 5 + t.height), cv::FONT_HERSHEY_SIMPLEX, sf, cv::Scalar(220, 220, 220),
                  std::max(lw - 1, 1), cv::LINE_AA);
    }
    for (std::int64_t j = 0; classes_only && j < cls.size(0); ++j) {
      if (idx[j].item<std::int64_t>() != i) continue;
      draw_class_text(im, cls[j].item<std::int64_t>(), confs.defined() ? confs[j] : at::Tensor(), p, {x, y}, fs);
    }
    for (std::int64_t j = 0; !classes_only && j < cls.size(0); ++j) {
      if (idx[j].item<std::int64_t>() != i) continue;
      const bool label = !confs.defined();
      const float conf = label ? 1.0F : confs[j].item<float>();
      if (!label && !(conf > p.conf_thres)) continue;
      const auto b = boxes[j];
      float cx = b[0].item<float>(), cy = b[1].item<float>(), bw = b[2].item<float>(), bh = b[3].item<float>();
      const float sx = normalised ? static_cast<float>(w) : (scale < 1 ? static_cast<float>(scale) : 1.0F);
      const float sy = normalised ? static_cast<float>(h) : (scale < 1 ? static_cast<float>(scale) : 1.0F);
      cx *= sx, bw *= sx, cy *= sy, bh *= sy;
      const std::int64_t c = cls[j].item<std::int64_t>();
      std::string text = class_name(p.names, c);
      if (!label) {
        char buf[16];
        std::snprintf(buf, sizeof buf, " %.1f", static_cast<double>(conf));
        text += buf;
      }
      if (width == 5) {  // xywhr2xyxyxyxy, then integer corners (astype(np.int64): truncation)
        const auto k = data::xywhr_corners({cx + x, cy + y, bw, bh, b[4].item<float>()});
        std::vector<std::array<int, 2>> corners;
        for (int q = 0; q < 8; q += 2) corners.push_back({static_cast<int>(k[q]), static_cast<int>(k[q + 1])});
        draw_polygon_label(out, corners, text, c, lw);
        continue;
      }
      // Ultralytics draws integer corners (boxes.astype(np.int64): truncation).
      draw_box_label(out, std::trunc(cx - bw / 2 + x), std::trunc(cy - bh / 2 + y), std::trunc(cx + bw / 2 + x),
                              std::trunc(cy + bh / 2 + y), text, c, lw);
    }
    if (p.keypoints.defined() && p.keypoints.size(0) == idx.size(0))
      draw_tile_keypoints(out, p, i, cv::Rect(x, y, w, h), scale, idx, confs, lw);
    if (p.masks.defined()) draw_masks(out, p, i, cv::Rect(x, y, w, h), idx, cls, confs);
  }
  return out;
}

}  // namespace yolotrain::plots
