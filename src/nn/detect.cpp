#include "yolotrain/nn/detect.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/container/sequential.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "detect_branches.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::nn {
namespace detail {

torch::nn::Sequential branch(int64_t c_in, int64_t hidden, int64_t c_out) {
  return torch::nn::Sequential(Conv(ConvOptions(c_in, hidden, 3)), Conv(ConvOptions(hidden, hidden, 3)),
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, c_out, 1)));
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

}  // namespace detail

namespace {

// Pose26's cv4: the two Convs its keypoint and scale outputs share.
torch::nn::Sequential two_convs(int64_t c_in, int64_t hidden) {
  return torch::nn::Sequential(Conv(ConvOptions(c_in, hidden, 3)), Conv(ConvOptions(hidden, hidden, 3)));
}

// A 1x1 Conv2d per level (Pose26's cv4_kpts, cv4_sigma).
torch::nn::ModuleList outputs_1x1(size_t levels, int64_t c_in, int64_t c_out) {
  torch::nn::ModuleList list;
  for (size_t i = 0; i < levels; ++i) list->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(c_in, c_out, 1)));
  return list;
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

// Detect.get_topk_index + postprocess (8.4, not agnostic, one group): the k anchors with the best
// class score, then the best k (anchor, class) pairs among them; Segment.postprocess gathers the
// anchors' nm mask coefficients too, Pose.postprocess their nk keypoint values (`extra` of them).
at::Tensor top_k_detections(const at::Tensor& preds, int64_t nc, int64_t extra, int64_t max_det) {
  const auto parts = preds.split_with_sizes({4, nc, extra}, -1);
  const int64_t k = std::min<int64_t>(max_det, preds.size(1));
  const at::Tensor ori_index = std::get<1>(std::get<0>(parts[1].max(-1)).topk(k, 1)).unsqueeze(-1);
  const at::Tensor scores = parts[1].gather(1, ori_index.expand({-1, -1, nc}));
  auto [best, index] = scores.flatten(1).topk(k, 1);
  const at::Tensor idx = ori_index.gather(1, index.div(nc, "floor").unsqueeze(-1));
  const at::Tensor boxes = parts[0].gather(1, idx.expand({-1, -1, 4}));
  std::vector<at::Tensor> out = {boxes, best.unsqueeze(-1), index.remainder(nc).unsqueeze(-1).to(best.scalar_type())};
  if (extra > 0) out.push_back(parts[2].gather(1, idx.expand({-1, -1, extra})));
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
    for (int64_t c : o.ch()) box->push_back(detail::branch(c, c2, 4 * o.reg_max()));
    for (int64_t c : o.ch()) {
      if (o.legacy()) cls->push_back(detail::branch(c, c3, o.nc()));
      else cls->push_back(depthwise_branch(c, c3, o.nc()));
    }
  };
  build(cv2, cv3, "");
  dfl = o.reg_max() > 1 ? register_module("dfl", DFL(o.reg_max())) : nullptr;
  one2one_cv2 = one2one_cv3 = nullptr;
  if (o.end2end()) {
    detail::without_drawing([&] { build(one2one_cv2, one2one_cv3, "one2one_"); });
    detail::copy_tensors(*cv2, *one2one_cv2);
    detail::copy_tensors(*cv3, *one2one_cv3);
  }
  proto = nullptr;
  cv4 = one2one_cv4 = cv4_kpts = cv4_sigma = one2one_cv4_kpts = one2one_cv4_sigma = nullptr;
  flow_model = nullptr;
  if (int(o.nm() > 0) + int(keypoints()) + int(rotated()) > 1) {
    throw Error("Detect: a head has mask coefficients, keypoints or angles, not several");
  }
  if (o.nm() > 0) build_mask_branch();
  if (keypoints()) build_pose_branch();
  if (rotated()) build_angle_branch();
}

// Pose.__init__ after Detect's: cv4 (Conv3x3, Conv3x3, Conv2d -> nk), one2one_cv4 = deepcopy(cv4).
// Pose26.__init__ then builds flow_model = RealNVP(), replaces cv4 by two Convs of
// max(ch[0] / 4, n * (dims + 2)) channels, adds cv4_kpts and cv4_sigma, and their one-to-one
// copies: every draw in that order, Pose's discarded cv4 included.
void DetectImpl::build_pose_branch() {
  const auto& o = options;
  const auto& ks = o.kpt_shape();
  if (ks.size() != 2 || ks[0] < 1 || ks[0] > 10000 || (ks[1] != 2 && ks[1] != 3)) {
    std::string given;
    for (int64_t v : ks) given += (given.empty() ? "" : ", ") + std::to_string(v);
    throw Error("Pose: kpt_shape must be [keypoints, 2 or 3] (x y, or x y visible), got [" + given + "]");
  }
  const size_t levels = o.ch().size();
  auto build = [&](torch::nn::ModuleList& list, const std::string& name, const torch::nn::ModuleList& made) {
    list = list ? replace_module(name, made) : register_module(name, made);
  };
  auto pose_cv4 = [&] {
    torch::nn::ModuleList list;
    for (int64_t c : o.ch()) list->push_back(detail::branch(c, std::max<int64_t>(o.ch()[0] / 4, nk()), nk()));
    return list;
  };
  build(cv4, "cv4", pose_cv4());
  if (o.end2end()) {
    detail::without_drawing([&] { build(one2one_cv4, "one2one_cv4", pose_cv4()); });
    detail::copy_tensors(*cv4, *one2one_cv4);
  }
  if (!o.pose26()) return;
  flow_model = register_module("flow_model", RealNVP());
  const int64_t c4 = std::max<int64_t>(o.ch()[0] / 4, ks[0] * (ks[1] + 2));
  auto shared_convs = [&] {
    torch::nn::ModuleList list;
    for (int64_t c : o.ch()) list->push_back(two_convs(c, c4));
    return list;
  };
  build(cv4, "cv4", shared_convs());
  build(cv4_kpts, "cv4_kpts", outputs_1x1(levels, c4, nk()));
  build(cv4_sigma, "cv4_sigma", outputs_1x1(levels, c4, 2 * ks[0]));
  if (!o.end2end()) return;
  detail::without_drawing([&] {
    build(one2one_cv4, "one2one_cv4", shared_convs());
    build(one2one_cv4_kpts, "one2one_cv4_kpts", outputs_1x1(levels, c4, nk()));
    build(one2one_cv4_sigma, "one2one_cv4_sigma", outputs_1x1(levels, c4, 2 * ks[0]));
  });
  detail::copy_tensors(*cv4, *one2one_cv4);
  detail::copy_tensors(*cv4_kpts, *one2one_cv4_kpts);
  detail::copy_tensors(*cv4_sigma, *one2one_cv4_sigma);
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
    for (int64_t c : o.ch()) list->push_back(detail::branch(c, c4, o.nm()));
  };
  build(cv4, "cv4");
  if (o.end2end()) {
    detail::without_drawing([&] { build(one2one_cv4, "one2one_cv4"); });
    detail::copy_tensors(*cv4, *one2one_cv4);
  }
  if (o.proto26()) proto = replace_module("proto", Proto(proto_options.nc(o.nc()).multi_scale(true)));
}

at::Tensor DetectImpl::per_anchor(const torch::nn::ModuleList& branch_list, const std::vector<at::Tensor>& xs,
                                  int64_t channels) {
  const int64_t b = xs[0].size(0);
  std::vector<at::Tensor> levels;
  for (size_t i = 0; i < xs.size(); ++i)
    levels.push_back(run_branch(*branch_list->ptr(i), xs[i]).view({b, channels, -1}));
  return at::cat(levels, 2);
}

void DetectImpl::pose_outputs(bool one2one, const std::vector<at::Tensor>& xs, at::Tensor& keypoints,
                              at::Tensor& sigma) {
  const torch::nn::ModuleList& head = one2one ? one2one_cv4 : cv4;
  if (!options.pose26()) {
    keypoints = per_anchor(head, xs, nk());
    return;
  }
  const torch::nn::ModuleList& kpts = one2one ? one2one_cv4_kpts : cv4_kpts;
  const torch::nn::ModuleList& scales = one2one ? one2one_cv4_sigma : cv4_sigma;
  const int64_t b = xs[0].size(0), n_sigma = 2 * options.kpt_shape()[0];
  std::vector<at::Tensor> k, s;
  for (size_t i = 0; i < xs.size(); ++i) {
    const at::Tensor features = run_branch(*head->ptr(i), xs[i]);
    k.push_back(detail::forward_conv(*kpts->ptr(i)->as<torch::nn::Conv2dImpl>(), features).view({b, nk(), -1}));
    if (is_training())  // Pose26: the scales only in training (the RLE loss)
      s.push_back(detail::forward_conv(*scales->ptr(i)->as<torch::nn::Conv2dImpl>(), features).view({b, n_sigma, -1}));
  }
  keypoints = at::cat(k, 2);
  if (!s.empty()) sigma = at::cat(s, 2);
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
  if (keypoints()) pose_outputs(false, xs, out.keypoints, out.keypoint_sigma);
  if (rotated()) out.angle = angle_outputs(false, xs);
  if (segments()) {
    out.mask_coefficients = per_anchor(cv4, xs, options.nm());
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
  if (segments()) out.one2one_mask_coefficients = per_anchor(one2one_cv4, in, options.nm());
  if (keypoints()) pose_outputs(true, in, out.one2one_keypoints, out.one2one_keypoint_sigma);
  if (rotated()) out.one2one_angle = angle_outputs(true, in);
  return out;
}

DetectImpl::RawParts DetectImpl::split_raw(const std::vector<at::Tensor>& raw) {
  if (stride.size() != raw.size()) {
    throw Error("Detect::decode: strides are not set for " + std::to_string(raw.size()) +
                " levels; build the head through DetectionModel (its probe forward sets them)");
  }
  const int64_t b = raw[0].size(0);
  std::vector<at::Tensor> flat;
  for (const auto& x : raw) flat.push_back(x.view({b, no(), -1}));
  auto [anchors, strides] = make_anchors(raw, stride, 0.5);
  const auto parts = at::cat(flat, 2).split_with_sizes({4 * options.reg_max(), options.nc()}, 1);
  return {dfl ? dfl->forward(parts[0]) : parts[0], parts[1], anchors.t().unsqueeze(0), strides.t()};
}

at::Tensor DetectImpl::decode(const std::vector<at::Tensor>& raw, bool xyxy) {
  const RawParts p = split_raw(raw);
  const at::Tensor dbox = dist2bbox(p.distances, p.anchors, !xyxy, 1) * p.strides;
  return at::cat({dbox, p.scores.sigmoid()}, 1);
}

at::Tensor DetectImpl::decode_keypoints(const at::Tensor& keypoints, const std::vector<at::Tensor>& raw) const {
  auto [anchors, strides] = make_anchors(raw, stride, 0.5);
  const int64_t b = keypoints.size(0), n = options.kpt_shape()[0], dims = options.kpt_shape()[1];
  const at::Tensor y = keypoints.view({b, n, dims, -1});
  const at::Tensor s = strides.view({-1});
  std::vector<at::Tensor> parts;
  for (int64_t d = 0; d < 2; ++d) {
    const at::Tensor a = anchors.select(1, d), v = y.select(2, d);
    parts.push_back(options.pose26() ? (v + a) * s : (v * 2.0 + (a - 0.5)) * s);  // Pose26: no * 2 - 0.5
  }
  if (dims == 3) parts.push_back(y.select(2, 2).sigmoid());
  return at::stack(parts, 2).view({b, n * dims, -1});
}

at::Tensor DetectImpl::inference(const HeadOutputs& heads) {
  if (rotated()) {  // OBB._inference: rotated boxes, scores, the angle; OBB.postprocess: its top-k
    const bool e2e = end2end();
    const at::Tensor& angle = e2e ? heads.one2one_angle : heads.angle;
    if (!angle.defined()) throw Error("OBB::inference: the angles are missing");
    const at::Tensor all = at::cat({decode_rotated(e2e ? heads.one2one : heads.one2many, angle), angle}, 1);
    return e2e ? top_k_detections(all.permute({0, 2, 1}), options.nc(), options.ne(), options.max_det()) : all;
  }
  // Segment._inference appends the mask coefficients, Pose._inference the decoded keypoints.
  const auto with_extra = [&](at::Tensor decoded, const at::Tensor& coefficients, const at::Tensor& kpts,
                              const std::vector<at::Tensor>& raw) {
    if (segments() && !coefficients.defined()) throw Error("Segment::inference: the mask coefficients are missing");
    if (keypoints() && !kpts.defined()) throw Error("Pose::inference: the keypoints are missing");
    if (segments()) return at::cat({decoded, coefficients}, 1);
    if (keypoints()) return at::cat({decoded, decode_keypoints(kpts, raw)}, 1);
    return decoded;
  };
  if (!end2end()) return with_extra(decode(heads.one2many), heads.mask_coefficients, heads.keypoints, heads.one2many);
  if (heads.one2one.empty()) throw Error("Detect::inference: the end-to-end head needs its one-to-one outputs");
  const at::Tensor all = with_extra(decode(heads.one2one, true), heads.one2one_mask_coefficients,
                                    heads.one2one_keypoints, heads.one2one);
  return top_k_detections(all.permute({0, 2, 1}), options.nc(), segments() ? options.nm() : nk(), options.max_det());
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
