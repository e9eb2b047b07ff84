#include "yolotrain/predict/annotate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include <ATen/ATen.h>

#include "yolotrain/plots/box_label.hpp"
#include "yolotrain/plots/keypoints.hpp"

namespace yolotrain::predict {

void draw_masks(data::Image& image, const std::vector<Detection>& boxes, float alpha) {
  std::vector<std::array<float, 3>> colors;  // colors(cls, bgr=True) / 255 * alpha
  std::vector<const Detection*> masked;
  const std::size_t pixels = static_cast<std::size_t>(image.height) * static_cast<std::size_t>(image.width);
  for (const auto& d : boxes) {
    if (d.mask.size() != pixels) continue;
    const auto c = plots::class_color(d.cls);
    colors.push_back({c[0] / 255.0F * alpha, c[1] / 255.0F * alpha, c[2] / 255.0F * alpha});
    masked.push_back(&d);
  }
  if (masked.empty()) return;
  for (std::size_t i = 0; i < pixels; ++i) {
    float inv = 1.0F;
    std::array<float, 3> mcs{0, 0, 0};
    bool any = false;
    for (std::size_t k = 0; k < masked.size(); ++k) {
      const float m = masked[k]->mask[i] ? 1.0F : 0.0F;
      inv *= 1.0F - m * alpha;
      for (int ch = 0; ch < 3; ++ch) mcs[ch] = std::max(mcs[ch], m * colors[k][ch]);
      any = any || m > 0;
    }
    if (!any) continue;  // (x / 255 * 1 + 0) * 255 gives x back
    std::uint8_t* px = image.pixels.data() + 3 * i;
    for (int ch = 0; ch < 3; ++ch) {
      px[ch] = static_cast<std::uint8_t>((static_cast<float>(px[ch]) / 255.0F * inv + mcs[ch]) * 255.0F);
    }
  }
}

void draw_detections(data::Image& image, const std::vector<Detection>& boxes, const AnnotateOptions& options) {
  if (image.empty()) return;
  draw_masks(image, boxes);
  const int lw = options.line_width > 0
                     ? options.line_width
                     : std::max(static_cast<int>(std::nearbyint((image.height + image.width + 3) / 2.0 * 0.003)), 2);
  for (auto it = boxes.rbegin(); it != boxes.rend(); ++it) {
    std::string label;
    if (options.show_labels) {
      char conf[16];
      std::snprintf(conf, sizeof(conf), " %.2f", static_cast<double>(it->conf));
      label = it->name + (options.show_conf ? conf : "");
    }
    if (it->xywhr.size() == 5) {  // an OBB box: its corners, as integers (np.asarray(box, dtype=int))
      const std::vector<float> k = it->corners();
      std::vector<std::array<int, 2>> corners;
      for (std::size_t q = 0; q + 1 < k.size(); q += 2)
        corners.push_back({static_cast<int>(k[q]), static_cast<int>(k[q + 1])});
      plots::draw_polygon_label(image, corners, label, it->cls, lw);
      continue;
    }
    plots::draw_box_label(image, it->x1, it->y1, it->x2, it->y2, label, it->cls, lw);
  }
  for (auto it = boxes.rbegin(); it != boxes.rend(); ++it) {  // Results.plot: kpts(k, radius=5)
    if (it->keypoints.empty() || it->keypoint_dims < 2) continue;
    const auto n = static_cast<std::int64_t>(it->keypoints.size()) / it->keypoint_dims;
    const at::Tensor k = at::from_blob(const_cast<float*>(it->keypoints.data()), {n, it->keypoint_dims}, at::kFloat);
    plots::draw_keypoints(image, k, 5, lw);
  }
}

void draw_probabilities(data::Image& image, const Prediction& prediction, const std::vector<std::string>& names) {
  std::vector<std::string> lines;
  for (const std::int64_t c : prediction.top5) {
    char p[16];
    std::snprintf(p, sizeof(p), " %.2f", static_cast<double>(prediction.probs.at(static_cast<std::size_t>(c))));
    lines.push_back((c < static_cast<std::int64_t>(names.size()) ? names[c] : std::to_string(c)) + p);
  }
  plots::draw_text_lines(image, lines);
}

}  // namespace yolotrain::predict
