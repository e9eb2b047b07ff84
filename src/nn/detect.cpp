#include "yolotrain/nn/detect.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/container/sequential.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

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
      y = detail::forward_conv(*last, y);
    } else {
      y = run_branch(*child, y);
    }
  }
  return y;
}

// Ultralytics builds the one-to-one branch as copy.deepcopy(cv2 / cv3): the same initial weights,
// and no random numbers drawn. Building it draws some, so the generator is put back after.
void copy_tensors(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto src = from.named_parameters(true), dst = to.named_parameters(true);
  for (const auto& p : src) dst[p.key()].copy_(p.value());
  auto src_b = from.named_buffers(true), dst_b = to.named_buffers(true);
  for (const auto& b : src_b) dst_b[b.key()].copy_(b.value());
}

// Builds what `build` registers without drawing from the default generator: Ultralytics makes the
// one-to-one branches by copy.deepcopy, which draws no random numbers.
template <class Build>
void without_drawing(Build build) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  at::Tensor state;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());  // not held while building: drawing takes it
    state = gen.get_state();
  }
  build();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Detect.get_topk_index + postprocess (8.4, not agnostic, one group): the k anchors with the best
// class score, then the best k (anchor, class) pairs among them; Segment.postprocess gathers the
// anchors' nm mask coefficients too.
at::Tensor top_k_detections(const at::Tensor& preds, int64_t nc, int64_t nm, int64_t max_det) {
  const auto parts = preds.split_with_sizes({4, nc, nm}, -1);
  const int64_t k = std::min<int64_t>(max_det, preds.size(1));
  const at::Tensor ori_index = std::get<1>(std::get<0>(parts[1].max(-1)).topk(k, 1)).unsqueeze(-1);
  const at::Tensor scores = parts[1].gather(1, ori_index.expand({-1, -1, nc}));
  auto [best, index] = scores.flatten(1).topk(k, 1);
  const at::Tensor idx = ori_index.gather(1, index.div(nc, "floor").unsqueeze(-1));
  const at::Tensor boxes = parts[0].gather(1, idx.expand({-1, -1, 4}));
  std::vector<at::Tensor> out = {boxes, best.unsqueeze(-1), index.remainder(nc).unsqueeze(-1).to(best.scalar_type())};
  if (nm > 0) out.push_back(parts[2].gather(1, idx.expand({-1, -1, nm})));
  return at::cat(out, -1);
}

}  // namespace

DetectImpl::DetectImpl(const DetectOptions& options_) : options(options_) { reset(); }

void DetectImpl::reset() {
  const auto& o = options;
  if (o.nc() <= 0) throw Error("Detect: nc must be positive, got " + std::to_string(o.nc()));
  if (o.ch().empty()) throw Error("Detect: needs at least one input level");
  if (o.reg_max() < 1) throw Error("Detect: reg_max must be at least 1, got " + std::to_string(o.reg_max()));
  const int64_t c2 = std::max<int64_t>({16, o.ch()[0] / 4, o.reg_max() * 4});
  const int64_t c3 = std::max<int64_t>(o.ch()[0], std::min<int64_t>(o.nc(), 100));
  auto build = [&](torch::nn::ModuleList& box, torch::nn::ModuleList& cls, const std::string& prefix) {
    box = register_module(prefix + "cv2", torch::nn::ModuleList());
    cls = register_module(prefix + "cv3", torch::nn::ModuleList());
    for (int64_t c : o.ch()) box->push_back(branch(c, c2, 4 * o.reg_max()));
    for (int64_t c : o.ch()) {
      if (o.legacy()) cls->push_back(branch(c, c3, o.nc()));
      else cls->push_back(depthwise_branch(c, c3, o.nc()));
    }
  };
  build(cv2, cv3, "");
  dfl = o.reg_max() > 1 ? register_module("dfl", DFL(o.reg_max())) : nullptr;
  one2one_cv2 = one2one_cv3 = nullptr;
  if (o.end2end()) {
    without_drawing([&] { build(one2one_cv2, one2one_cv3, "one2one_"); });
    copy_tensors(*cv2, *one2one_cv2);
    copy_tensors(*cv3, *one2one_cv3);
  }
  proto = nullptr;
  cv4 = one2one_cv4 = nullptr;
  if (o.nm() > 0) build_mask_branch();
}

// Segment.__init__ after Detect's: Proto(ch[0], npr, nm), cv4, one2one_cv4 = deepcopy(cv4);
// Segment26 then replaces the Proto by Proto26(ch, npr, nm, nc): both draw, in that order.
void DetectImpl::build_mask_branch() {
  const auto& o = options;
  if (o.npr() < 1) throw Error("Segment: npr must be positive, got " + std::to_string(o.npr()));
  ProtoOptions proto_options(o.ch(), o.npr(), o.nm());
  proto = register_module("proto", Proto(proto_options));
  const int64_t c4 = std::max<int64_t>(o.ch()[0] / 4, o.nm());
  auto build = [&](torch::nn::ModuleList& list, const std::string& name) {
    list = register_module(name, torch::nn::ModuleList());
    for (int64_t c : o.ch()) list->push_back(branch(c, c4, o.nm()));
  };
  build(cv4, "cv4");
  if (o.end2end()) {
    without_drawing([&] { build(one2one_cv4, "one2one_cv4"); });
    copy_tensors(*cv4, *one2one_cv4);
  }
  if (o.proto26()) proto = replace_module("proto", Proto(proto_options.nc(o.nc()).multi_scale(true)));
}

at::Tensor DetectImpl::mask_coefficients(const torch::nn::ModuleList& branch_list, const std::vector<at::Tensor>& xs) {
  const int64_t b = xs[0].size(0);
  std::vector<at::Tensor> levels;
  for (size_t i = 0; i < xs.size(); ++i)
    levels.push_back(run_branch(*branch_list->ptr(i), xs[i]).view({b, options.nm(), -1}));
  return at::cat(levels, 2);
}

std::vector<at::Tensor> DetectImpl::run(const torch::nn::ModuleList& box, const torch::nn::ModuleList& cls,
                                        const std::vector<at::Tensor>& xs) {
  if (xs.size() != box->size()) {
    throw Error("Detect: expected " + std::to_string(box->size()) + " feature levels, got " +
                std::to_string(xs.size()));
  }
  std::vector<at::Tensor> out;
  out.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    out.push_back(at::cat({run_branch(*box->ptr(i), xs[i]), run_branch(*cls->ptr(i), xs[i])}, 1));
  }
  return out;
}

std::vector<at::Tensor> DetectImpl::forward(const std::vector<at::Tensor>& xs) { return run(cv2, cv3, xs); }

HeadOutputs DetectImpl::forward_heads(const std::vector<at::Tensor>& xs) {
  HeadOutputs out;
  out.one2many = forward(xs);
  if (segments()) {
    out.mask_coefficients = mask_coefficients(cv4, xs);
    ProtoOutputs p = proto->forward(xs);
    out.proto = std::move(p.proto);
    out.semantic = std::move(p.semantic);
  }
  if (!end2end()) return out;
  std::vector<at::Tensor> in(xs);
  if (is_training()) {
    for (auto& x : in) x = x.detach();
  }
  out.one2one = run(one2one_cv2, one2one_cv3, in);
  if (segments()) out.one2one_mask_coefficients = mask_coefficients(one2one_cv4, in);
  return out;
}

at::Tensor DetectImpl::decode(const std::vector<at::Tensor>& raw, bool xyxy) {
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
  const at::Tensor dist = dfl ? dfl->forward(parts[0]) : parts[0];
  const at::Tensor dbox = dist2bbox(dist, anchors.t().unsqueeze(0), !xyxy, 1) * strides.t();
  return at::cat({dbox, parts[1].sigmoid()}, 1);
}

at::Tensor DetectImpl::inference(const HeadOutputs& heads) {
  const auto with_masks = [&](at::Tensor decoded, const at::Tensor& coefficients) {
    if (!segments()) return decoded;
    if (!coefficients.defined()) throw Error("Segment::inference: the mask coefficients are missing");
    return at::cat({decoded, coefficients}, 1);
  };
  if (!end2end()) return with_masks(decode(heads.one2many), heads.mask_coefficients);
  if (heads.one2one.empty()) throw Error("Detect::inference: the end-to-end head needs its one-to-one outputs");
  return top_k_detections(with_masks(decode(heads.one2one, true), heads.one2one_mask_coefficients).permute({0, 2, 1}),
                          options.nc(), options.nm(), options.max_det());
}

void DetectImpl::bias_init() {
  torch::NoGradGuard no_grad;
  auto init = [&](const torch::nn::ModuleList& box, const torch::nn::ModuleList& cls) {
    for (size_t i = 0; i < stride.size() && i < box->size(); ++i) {
      box->ptr(i)->children().back()->as<torch::nn::Conv2dImpl>()->bias.fill_(options.box_bias());
      const double s = stride[i];
      const double v = std::log(5.0 / static_cast<double>(options.nc()) / std::pow(640.0 / s, 2));
      cls->ptr(i)->children().back()->as<torch::nn::Conv2dImpl>()->bias.fill_(v);
    }
  };
  init(cv2, cv3);
  if (one2one_cv2) init(one2one_cv2, one2one_cv3);
}

}  // namespace yolotrain::nn
