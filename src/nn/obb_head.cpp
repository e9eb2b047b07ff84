// Ultralytics 8.4's OBB and OBB26 heads as a DetectImpl with an angle branch (DetectOptions::ne):
// head.py's OBB.__init__ (cv4 after Detect's branches, one2one_cv4 its copy), forward_head (the
// angle per anchor; OBB: (sigmoid - 0.25) * pi, OBB26: raw) and decode_bboxes (dist2rbox).
#include <ATen/ATen.h>

#include <cmath>

#include "detect_branches.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/nn/detect.hpp"

namespace yolotrain::nn {

void DetectImpl::build_angle_branch() {
  const auto& o = options;
  if (o.ne() < 1 || o.ne() > 16) throw Error("OBB: ne must be 1 to 16 angle values, got " + std::to_string(o.ne()));
  const int64_t c4 = std::max<int64_t>(o.ch()[0] / 4, o.ne());
  auto build = [&](torch::nn::ModuleList& list, const std::string& name) {
    list = register_module(name, torch::nn::ModuleList());
    for (int64_t c : o.ch()) list->push_back(detail::branch(c, c4, o.ne()));
  };
  build(cv4, "cv4");
  if (!o.end2end()) return;
  detail::without_drawing([&] { build(one2one_cv4, "one2one_cv4"); });
  detail::copy_tensors(*cv4, *one2one_cv4);
}

at::Tensor DetectImpl::angle_outputs(bool one2one, const std::vector<at::Tensor>& xs) {
  const at::Tensor raw = per_anchor(one2one ? one2one_cv4 : cv4, xs, options.ne());
  if (options.obb26()) return raw;
  return (raw.sigmoid() - 0.25) * M_PI;  // [-pi/4, 3pi/4)
}

at::Tensor DetectImpl::decode_rotated(const std::vector<at::Tensor>& raw, const at::Tensor& angle) {
  const RawParts p = split_raw(raw);
  const at::Tensor rbox = dist2rbox(p.distances, angle, p.anchors, 1) * p.strides;
  return at::cat({rbox, p.scores.sigmoid()}, 1);
}

}  // namespace yolotrain::nn
