#include "yolotrain/predict/annotate.hpp"

#include <cmath>
#include <cstdio>

#include "yolotrain/plots/box_label.hpp"

namespace yolotrain::predict {

void draw_detections(data::Image& image, const std::vector<Detection>& boxes, const AnnotateOptions& options) {
  if (image.empty()) return;
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
    plots::draw_box_label(image, it->x1, it->y1, it->x2, it->y2, label, it->cls, lw);
  }
}

}  // namespace yolotrain::predict
