#include "yolotrain/nn/detect.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/container/sequential.h>

#include <algorithm>
#include <cmath>

#include "yolotrain/error.hpp"

namespace yolotrain::nn {
namespace {

torch::nn::Sequential branch(int64_t c_in, int64_t hidden, int64_t c_out) {
  return torch::nn::Sequential(Conv(ConvOptions(c_in, hidden, 3)), Conv(ConvOptions(hidden, hidden, 3)),
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, c_out, 1)));
}

// YOLO11's class branch (Detect with legacy false). Ultralytics nests Sequentials, which
// libtorch's Sequential cannot hold: ModuleLists give the same names (cv3.0.0.0, ...), and
// run_branch walks the children in order.
torch::nn::ModuleList depthwise_branch(int64_t c_in, int64_t hidden, int64_t c_out) {
  return torch::nn::ModuleList(
      torch::nn::ModuleList(Conv(dwconv_options(c_in, c_in, 3)), Conv(ConvOptions(c_in, hidden, 1))),
      torch::nn::ModuleList(Conv(dwconv_options(hidden, hidden, 3)), Conv(ConvOptions(hidden, hidden, 1))),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, c_out, 1)));
}

// The branch's modules in order (nested lists flattened); the last Conv2d's MACs counted.
at::Tensor run_branch(const torch::nn::Module& branch, at::Tensor y) {
  for (const auto& child : branch.children()) {
    if (auto* conv = child->as<ConvImpl>()) {
      y = conv->forward(y);
    } else if (auto* last = child->as<torch::nn::Conv2dImpl>()) {
      y = last->forward(y);
      detail::count_macs(*last, y);
    } else {
      y = run_branch(*child, y);
    }
  }
  return y;
}

}  // namespace

DetectImpl::DetectImpl(const DetectOptions& options_) : options(options_) { reset(); }

void DetectImpl::reset() {
  const auto& o = options;
  if (o.nc() <= 0) throw Error("Detect: nc must be positive, got " + std::to_string(o.nc()));
  if (o.ch().empty()) throw Error("Detect: needs at least one input level");
  const int64_t c2 = std::max<int64_t>({16, o.ch()[0] / 4, o.reg_max() * 4});
  const int64_t c3 = std::max<int64_t>(o.ch()[0], std::min<int64_t>(o.nc(), 100));
  cv2 = register_module("cv2", torch::nn::ModuleList());
  cv3 = register_module("cv3", torch::nn::ModuleList());
  for (int64_t c : o.ch()) cv2->push_back(branch(c, c2, 4 * o.reg_max()));
  for (int64_t c : o.ch()) {
    if (o.legacy()) cv3->push_back(branch(c, c3, o.nc()));
    else cv3->push_back(depthwise_branch(c, c3, o.nc()));
  }
  dfl = register_module("dfl", DFL(o.reg_max()));
}

std::vector<at::Tensor> DetectImpl::forward(const std::vector<at::Tensor>& xs) {
  if (xs.size() != cv2->size()) {
    throw Error("Detect: expected " + std::to_string(cv2->size()) + " feature levels, got " +
                std::to_string(xs.size()));
  }
  std::vector<at::Tensor> out;
  out.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    out.push_back(at::cat({run_branch(*cv2[i], xs[i]), run_branch(*cv3[i], xs[i])}, 1));
  }
  return out;
}

at::Tensor DetectImpl::decode(const std::vector<at::Tensor>& raw) {
  if (stride.size() != raw.size()) {
    throw Error("Detect::decode: strides are not set for " + std::to_string(raw.size()) +
                " levels; build the head through DetectionModel (its probe forward sets them)");
  }
  const int64_t b = raw[0].size(0);
  std::vector<at::Tensor> flat;
  for (const auto& x : raw) flat.push_back(x.view({b, no(), -1}));
  const at::Tensor x_cat = at::cat(flat, 2);
  auto [anchors, strides] = make_anchors(raw, stride, 0.5);
  const auto parts = x_cat.split_with_sizes({4 * options.reg_max(), options.nc()}, 1);
  const at::Tensor dbox = dist2bbox(dfl->forward(parts[0]), anchors.t().unsqueeze(0), true, 1) * strides.t();
  return at::cat({dbox, parts[1].sigmoid()}, 1);
}

void DetectImpl::bias_init() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < stride.size() && i < cv2->size(); ++i) {
    cv2[i]->children().back()->as<torch::nn::Conv2dImpl>()->bias.fill_(1.0);
    const double s = stride[i];
    const double v = std::log(5.0 / static_cast<double>(options.nc()) / std::pow(640.0 / s, 2));
    cv3[i]->children().back()->as<torch::nn::Conv2dImpl>()->bias.fill_(v);
  }
}

}  // namespace yolotrain::nn
