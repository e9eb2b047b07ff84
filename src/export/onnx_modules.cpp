#include "onnx_modules.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <torch/nn/modules/container/sequential.h>

#include "yolotrain/error.hpp"
#include "yolotrain/torch_compat.hpp"

namespace yolotrain::exporter::detail {
namespace {

using Ints = std::vector<std::int64_t>;

std::string slice(OnnxGraph& g, const std::string& x, std::int64_t start, std::int64_t end, std::int64_t axis) {
  return g.node("Slice", {x, g.constant(Ints{start}, {1}), g.constant(Ints{end}, {1}), g.constant(Ints{axis}, {1})});
}

std::string reshape(OnnxGraph& g, const std::string& x, const Ints& shape) {
  return g.node("Reshape", {x, g.constant(shape, {static_cast<std::int64_t>(shape.size())})});
}

std::string concat(OnnxGraph& g, const std::vector<std::string>& xs, std::int64_t axis, const std::string& out = "") {
  return g.node("Concat", xs, {{"axis", axis}}, out);
}

Ints vec(const torch::ExpandingArray<2>& a) {
  const auto& values = *a;
  return Ints(values.begin(), values.end());
}

// A Conv2d with its bias (every convolution has one once the BatchNorms are folded in).
std::string conv2d(OnnxGraph& g, torch::nn::Conv2dImpl& conv, const std::string& x) {
  const auto& o = conv.options;
  if (!conv.bias.defined()) throw Error("ONNX export: a convolution without bias; fuse the model first");
  const auto* pad = torch_compat::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (pad == nullptr) throw Error("ONNX export: only explicit convolution padding is written");
  const Ints k = vec(o.kernel_size()), s = vec(o.stride()), d = vec(o.dilation()), p = vec(*pad);
  return g.node("Conv", {x, g.weight("weight", conv.weight), g.weight("bias", conv.bias)},
                {{"dilations", d}, {"group", o.groups()}, {"kernel_shape", k}, {"pads", Ints{p[0], p[1], p[0], p[1]}},
                 {"strides", s}});
}

// Detect's branch: Conv, Conv, Conv2d (children 0, 1, 2); YOLO11's class branch has lists of two
// Convs as children 0 and 1.
std::string branch(OnnxGraph& g, torch::nn::Module& branch_module, const std::string& x) {
  std::string y = x;
  int i = 0;
  for (const auto& child : branch_module.children()) {
    auto scope = g.scope(std::to_string(i++));
    if (auto* conv = child->as<nn::ConvImpl>()) y = emit(g, *conv, y);
    else if (auto* last = child->as<torch::nn::Conv2dImpl>()) y = conv2d(g, *last, y);
    else y = branch(g, *child, y);
  }
  return y;
}

// Runs Conv `conv` in the scope `name`.
std::string scoped(OnnxGraph& g, const char* name, nn::ConvImpl& conv, const std::string& x) {
  auto scope = g.scope(name);
  return emit(g, conv, x);
}

// DFL's expectation over the bins: [B, 4*reg_max, A] -> [B, 4, A]. The bins go last so that one
// Softmax means the same in every opset (before 13 it flattened all axes from `axis` on), and
// the fixed 1x1 convolution with weights 0..reg_max-1 is a MatMul with that column.
std::string dfl(OnnxGraph& g, nn::DFLImpl& dfl, const std::string& x) {
  auto scope = g.scope("dfl");
  const std::int64_t c1 = dfl.c1;
  std::string y = reshape(g, x, {0, 4, c1, -1});
  y = g.node("Transpose", {y}, {{"perm", Ints{0, 1, 3, 2}}});
  y = g.node("Softmax", {y}, {{"axis", std::int64_t{-1}}});
  y = g.node("MatMul", {y, g.constant(dfl.conv->weight.detach().reshape({c1, 1}).to(at::kFloat))});
  return reshape(g, y, {0, 4, -1});
}

// The anchor points [2, h*w] and strides [1, h*w] of one level computed from its feature map's
// shape (Ultralytics' make_anchors: x + 0.5, y + 0.5, y outer, x inner).
std::pair<std::string, std::string> level_anchors(OnnxGraph& g, const std::string& feature, double stride) {
  const std::string shape = g.node("Shape", {feature});
  auto side = [&](std::int64_t axis) {
    const std::string n = g.node("Gather", {shape, g.constant(Ints{axis}, {})}, {{"axis", std::int64_t{0}}});
    const std::string f = g.node("Cast", {n}, {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});
    const std::string r = g.node("Range", {g.constant(std::vector<float>{0.0F}, {}), f,
                                           g.constant(std::vector<float>{1.0F}, {})});
    return g.node("Add", {r, g.constant(std::vector<float>{0.5F}, {})});
  };
  const std::string xs = reshape(g, side(3), {1, -1});  // [1, w]
  const std::string ys = reshape(g, side(2), {-1, 1});  // [h, 1]
  const std::string zero = g.constant(std::vector<float>{0.0F}, {});
  const std::string gx = g.node("Add", {xs, g.node("Mul", {ys, zero})});  // [h, w]
  const std::string gy = g.node("Add", {ys, g.node("Mul", {xs, zero})});
  const std::string ax = reshape(g, gx, {1, -1});
  const std::string ay = reshape(g, gy, {1, -1});
  const std::string anchors = concat(g, {ax, ay}, 0);
  const std::string strides =
      g.node("Add", {g.node("Mul", {ax, zero}), g.constant(std::vector<float>{static_cast<float>(stride)}, {})});
  return {anchors, strides};
}

}  // namespace

std::string emit(OnnxGraph& g, nn::ConvImpl& conv, const std::string& x) {
  std::string y;
  {
    auto scope = g.scope("conv");
    y = conv2d(g, *conv.conv, x);
  }
  if (!conv.act) return y;
  auto scope = g.scope("act");
  return g.node("Mul", {y, g.node("Sigmoid", {y})});
}

std::string emit(OnnxGraph& g, nn::BottleneckImpl& block, const std::string& x) {
  const std::string y = scoped(g, "cv2", *block.cv2, scoped(g, "cv1", *block.cv1, x));
  return block.add ? g.node("Add", {x, y}) : y;
}

namespace {

// YOLO26's C3k2 block with attention (8.4's `Sequential(Bottleneck, PSABlock)`): children "0", "1".
std::string attention_block(OnnxGraph& g, torch::nn::Module& block, const std::string& x) {
  std::string y = x;
  for (const auto& child : block.named_children()) {
    auto scope = g.scope(child.key());
    if (auto* b = child.value()->as<nn::BottleneckImpl>()) y = emit(g, *b, y);
    else if (auto* psa = child.value()->as<nn::PSABlockImpl>()) y = emit(g, *psa, y);
    else throw Error("ONNX export: a C3k2 block holds a " + child.value()->name() + ", which has no ONNX form");
  }
  return y;
}

}  // namespace

std::string emit(OnnxGraph& g, nn::C2fImpl& block, const std::string& x) {
  const std::string y = scoped(g, "cv1", *block.cv1, x);
  std::vector<std::string> parts{slice(g, y, 0, block.c, 1), slice(g, y, block.c, 2 * block.c, 1)};
  {
    auto m = g.scope("m");
    for (size_t i = 0; i < block.m->size(); ++i) {
      auto scope = g.scope(std::to_string(i));
      const auto& child = block.m->ptr(i);
      if (auto* c3k = child->as<nn::C3kImpl>()) parts.push_back(emit(g, *c3k, parts.back()));
      else if (auto* b = child->as<nn::BottleneckImpl>()) parts.push_back(emit(g, *b, parts.back()));
      else parts.push_back(attention_block(g, *child, parts.back()));
    }
  }
  return scoped(g, "cv2", *block.cv2, concat(g, parts, 1));
}

std::string emit(OnnxGraph& g, nn::C3kImpl& block, const std::string& x) {
  std::string y = scoped(g, "cv1", *block.cv1, x);
  {
    auto m = g.scope("m");
    for (size_t i = 0; i < block.m->size(); ++i) {
      auto scope = g.scope(std::to_string(i));
      y = emit(g, *block.m->ptr<nn::BottleneckImpl>(i), y);
    }
  }
  const std::string cat = concat(g, {y, scoped(g, "cv2", *block.cv2, x)}, 1);
  return scoped(g, "cv3", *block.cv3, cat);
}

std::string emit(OnnxGraph& g, nn::AttentionImpl& attention, const std::string& x) {
  const std::int64_t heads = attention.options.num_heads(), kd = attention.key_dim, hd = attention.head_dim;
  const std::string shape = g.node("Shape", {x});  // [B, C, H, W]
  const std::string qkv = reshape(g, scoped(g, "qkv", *attention.qkv, x), {0, heads, 2 * kd + hd, -1});
  const std::string q = slice(g, qkv, 0, kd, 2), k = slice(g, qkv, kd, 2 * kd, 2);
  const std::string v = slice(g, qkv, 2 * kd, 2 * kd + hd, 2);
  const Ints swap_last{0, 1, 3, 2};
  std::string attn = g.node("MatMul", {g.node("Transpose", {q}, {{"perm", swap_last}}), k});
  attn = g.node("Mul", {attn, g.constant(std::vector<float>{static_cast<float>(attention.scale)}, {})});
  attn = g.node("Softmax", {attn}, {{"axis", std::int64_t{-1}}});
  const std::string out = g.node("MatMul", {v, g.node("Transpose", {attn}, {{"perm", swap_last}})});
  const std::string pe = scoped(g, "pe", *attention.pe, g.node("Reshape", {v, shape}));
  return scoped(g, "proj", *attention.proj, g.node("Add", {g.node("Reshape", {out, shape}), pe}));
}

std::string emit(OnnxGraph& g, nn::PSABlockImpl& block, const std::string& x) {
  auto residual = [&](const std::string& in, const std::string& y) {
    return block.options.shortcut() ? g.node("Add", {in, y}) : y;
  };
  std::string attn;
  {
    auto scope = g.scope("attn");
    attn = residual(x, emit(g, *block.attn, x));
  }
  auto ffn = g.scope("ffn");
  const std::string hidden = scoped(g, "0", *block.ffn->ptr<nn::ConvImpl>(0), attn);
  return residual(attn, scoped(g, "1", *block.ffn->ptr<nn::ConvImpl>(1), hidden));
}

std::string emit(OnnxGraph& g, nn::C2PSAImpl& block, const std::string& x) {
  const std::string y = scoped(g, "cv1", *block.cv1, x);
  std::string b = slice(g, y, block.c, 2 * block.c, 1);
  {
    auto m = g.scope("m");
    for (size_t i = 0; i < block.m->size(); ++i) {
      auto scope = g.scope(std::to_string(i));
      b = emit(g, *block.m->ptr<nn::PSABlockImpl>(i), b);
    }
  }
  return scoped(g, "cv2", *block.cv2, concat(g, {slice(g, y, 0, block.c, 1), b}, 1));
}

std::string emit(OnnxGraph& g, nn::SPPFImpl& block, const std::string& x) {
  std::vector<std::string> parts{scoped(g, "cv1", *block.cv1, x)};
  const std::int64_t k = block.options.k(), p = k / 2;
  {
    auto scope = g.scope("m");
    for (std::int64_t i = 0; i < block.options.n(); ++i) {
      parts.push_back(g.node("MaxPool", {parts.back()},
                             {{"kernel_shape", Ints{k, k}}, {"pads", Ints{p, p, p, p}}, {"strides", Ints{1, 1}}}));
    }
  }
  const std::string y = scoped(g, "cv2", *block.cv2, concat(g, parts, 1));
  return block.options.shortcut() && block.options.c1() == block.options.c2() ? g.node("Add", {y, x}) : y;
}

std::string emit(OnnxGraph& g, nn::ClassifyImpl& head, const std::string& x, const std::string& output) {
  const std::string pooled = g.node("GlobalAveragePool", {scoped(g, "conv", *head.conv, x)});
  std::string logits;
  {
    auto scope = g.scope("linear");
    logits = g.node("Gemm",
                    {g.node("Flatten", {pooled}, {{"axis", std::int64_t{1}}}), g.weight("weight", head.linear->weight),
                     g.weight("bias", head.linear->bias)},
                    {{"transB", std::int64_t{1}}});
  }
  return g.node("Softmax", {logits}, {{"axis", std::int64_t{1}}}, output);
}

std::string emit(OnnxGraph& g, nn::UpsampleImpl& upsample, const std::string& x) {
  const auto s = static_cast<float>(upsample.scale_factor);
  // roi is ignored outside tf_crop_and_resize but is a required input before opset 13: an empty one.
  const std::string roi = g.constant(at::empty({0}, at::kFloat));
  return g.node("Resize", {x, roi, g.constant(std::vector<float>{1, 1, s, s}, {4})},
                {{"coordinate_transformation_mode", std::string("asymmetric")},
                 {"mode", std::string("nearest")},
                 {"nearest_mode", std::string("floor")}});
}

std::string emit(OnnxGraph& g, nn::ConcatImpl& c, const std::vector<std::string>& xs) {
  return concat(g, xs, c.dimension);
}

namespace {

// Ultralytics 8.4's Detect.postprocess / get_topk_index on [B, A, 4 + nc] (xyxy, scores): the k
// anchors of highest class score, then the k best (anchor, class) pairs among them ->
// [B, k, 6] = x1 y1 x2 y2, score, class (then a Segment26's nm mask coefficients of those anchors,
// as Segment.postprocess). TopK, GatherElements, Div and Mod on int64, Cast.
std::string end2end_topk(OnnxGraph& g, const std::string& preds, std::int64_t nc, std::int64_t nm, std::int64_t k,
                         const std::string& output) {
  auto scope = g.scope("postprocess");
  const std::string boxes = slice(g, preds, 0, 4, 2), scores = slice(g, preds, 4, 4 + nc, 2);
  const std::string kk = g.constant(Ints{k}, {1});
  const std::string best = g.node("ReduceMax", {scores}, {{"axes", Ints{-1}}, {"keepdims", std::int64_t{0}}});
  const auto top_anchors = g.node_outputs("TopK", {best, kk}, 2, {{"axis", std::int64_t{-1}}});
  // [B, k] -> [B, k, 1] by Reshape (Unsqueeze's axes moved from attribute to input in opset 13)
  const std::string ori_index = reshape(g, top_anchors[1], {0, k, 1});
  const std::string gathered =
      g.node("GatherElements", {scores, g.node("Expand", {ori_index, g.constant(Ints{1, 1, nc}, {3})})},
             {{"axis", std::int64_t{1}}});
  const std::string flat = g.node("Flatten", {gathered}, {{"axis", std::int64_t{1}}});  // [B, k * nc]
  const auto top = g.node_outputs("TopK", {flat, kk}, 2, {{"axis", std::int64_t{-1}}});
  const std::string nc_const = g.constant(Ints{nc}, {});
  const std::string anchor_of = g.node("Div", {top[1], nc_const});  // index // nc (non-negative)
  const std::string cls =
      g.node("Cast", {g.node("Mod", {top[1], nc_const})}, {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});
  const std::string idx = g.node("GatherElements", {ori_index, reshape(g, anchor_of, {0, k, 1})},
                                 {{"axis", std::int64_t{1}}});  // [B, k, 1]
  const auto gather = [&](const std::string& values, std::int64_t channels) {
    return g.node("GatherElements", {values, g.node("Expand", {idx, g.constant(Ints{1, 1, channels}, {3})})},
                  {{"axis", std::int64_t{1}}});
  };
  std::vector<std::string> parts{gather(boxes, 4), reshape(g, top[0], {0, k, 1}), reshape(g, cls, {0, k, 1})};
  if (nm > 0) parts.push_back(gather(slice(g, preds, 4 + nc, 4 + nc + nm, 2), nm));
  return concat(g, parts, 2, output);
}

}  // namespace

namespace {

// One level's raw keypoints [B, nk, h * w]: Pose's cv4 branch, or Pose26's cv4 convs then cv4_kpts.
std::string level_keypoints(OnnxGraph& g, nn::DetectImpl& head, bool end2end, size_t i, const std::string& x) {
  std::string y;
  {
    auto a = g.scope(end2end ? "one2one_cv4" : "cv4"), b = g.scope(std::to_string(i));
    y = branch(g, *(end2end ? head.one2one_cv4 : head.cv4)[i], x);
  }
  if (head.options.pose26()) {
    auto a = g.scope(end2end ? "one2one_cv4_kpts" : "cv4_kpts"), b = g.scope(std::to_string(i));
    y = conv2d(g, *(end2end ? head.one2one_cv4_kpts : head.cv4_kpts)[i]->as<torch::nn::Conv2dImpl>(), y);
  }
  return reshape(g, y, {0, head.nk(), -1});
}

// Pose.kpts_decode / Pose26.kpts_decode as Ultralytics exports them: [B, nk, A] viewed [B, n, dims,
// A]; x, y = (raw * 2 + anchor - 0.5) * stride (Pose26: (raw + anchor) * stride), the visibility
// through a sigmoid; back to [B, nk, A]. `anchors` broadcast as [2, A], `strides` as [1, A].
std::string decode_keypoints(OnnxGraph& g, nn::DetectImpl& head, const std::string& raw, const std::string& anchors,
                             const std::string& strides) {
  auto scope = g.scope("kpts_decode");
  const std::int64_t n = head.options.kpt_shape()[0], dims = head.options.kpt_shape()[1];
  const std::string y = reshape(g, raw, {0, n, dims, -1});
  std::string xy = slice(g, y, 0, 2, 2);
  if (head.options.pose26()) {
    xy = g.node("Add", {xy, anchors});
  } else {
    const std::string shifted = g.node("Sub", {anchors, g.constant(std::vector<float>{0.5F}, {})});
    xy = g.node("Add", {g.node("Mul", {xy, g.constant(std::vector<float>{2.0F}, {})}), shifted});
  }
  xy = g.node("Mul", {xy, strides});
  if (dims == 3) xy = concat(g, {xy, g.node("Sigmoid", {slice(g, y, 2, 3, 2)})}, 2);
  return reshape(g, xy, {0, head.nk(), -1});
}

// OBB's angle [B, 1, A] from the levels' raw angle-branch outputs: (sigmoid - 0.25) * pi, or OBB26's raw.
std::string decode_angle(OnnxGraph& g, nn::DetectImpl& head, const std::vector<std::string>& raw) {
  const std::string angle = concat(g, raw, 2);
  if (head.options.obb26()) return angle;
  const std::string shifted = g.node("Sub", {g.node("Sigmoid", {angle}), g.constant(std::vector<float>{0.25F}, {})});
  return g.node("Mul", {shifted, g.constant(std::vector<float>{static_cast<float>(M_PI)}, {})});
}

// dist2rbox: the centre is the anchor plus the half-difference of the distances turned by the angle; the
// size, their sums. [B, 4, A] xywh in grid units.
std::string rotated_box(OnnxGraph& g, const std::string& lt, const std::string& rb, const std::string& angle,
                        const std::string& anchor_points) {
  const std::string half = g.node("Div", {g.node("Sub", {rb, lt}), g.constant(std::vector<float>{2.0F}, {})});
  const std::string xf = slice(g, half, 0, 1, 1), yf = slice(g, half, 1, 2, 1);
  const std::string cos = g.node("Cos", {angle}), sin = g.node("Sin", {angle});
  const std::string x = g.node("Sub", {g.node("Mul", {xf, cos}), g.node("Mul", {yf, sin})});
  const std::string y = g.node("Add", {g.node("Mul", {xf, sin}), g.node("Mul", {yf, cos})});
  return concat(g, {g.node("Add", {concat(g, {x, y}, 1), anchor_points}), g.node("Add", {lt, rb})}, 1);
}

}  // namespace

std::string emit(OnnxGraph& g, nn::DetectImpl& head, const std::vector<std::string>& xs, const DetectShapes& shapes,
                 const std::string& output) {
  const std::int64_t no = head.no(), reg = head.options.reg_max();
  if (head.stride.size() != xs.size()) throw Error("ONNX export: the head's strides are not set");
  const bool end2end = head.end2end();  // the one-to-one branch, decoded to xyxy, then the top-k
  auto& box_heads = end2end ? head.one2one_cv2 : head.cv2;
  auto& cls_heads = end2end ? head.one2one_cv3 : head.cv3;
  const std::int64_t nm = head.options.nm(), nk = head.nk();
  const bool rotated = head.rotated();  // OBB: an angle per anchor, rotated boxes (xywh) and the angle last
  std::vector<std::string> flat, anchors, strides, coefficients, keypoints, angles;
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string box, cls;
    {
      auto a = g.scope(end2end ? "one2one_cv2" : "cv2"), b = g.scope(std::to_string(i));
      box = branch(g, *box_heads[i], xs[i]);
    }
    {
      auto a = g.scope(end2end ? "one2one_cv3" : "cv3"), b = g.scope(std::to_string(i));
      cls = branch(g, *cls_heads[i], xs[i]);
    }
    if (nm > 0) {  // Segment: the mask coefficients [B, nm, h * w]
      auto a = g.scope(end2end ? "one2one_cv4" : "cv4"), b = g.scope(std::to_string(i));
      coefficients.push_back(reshape(g, branch(g, *(end2end ? head.one2one_cv4 : head.cv4)[i], xs[i]), {0, nm, -1}));
    }
    if (nk > 0) keypoints.push_back(level_keypoints(g, head, end2end, i, xs[i]));  // Pose: [B, nk, h * w]
    if (rotated) {  // OBB: the angle branch's raw [B, ne, h * w]
      auto a = g.scope(end2end ? "one2one_cv4" : "cv4"), b = g.scope(std::to_string(i));
      angles.push_back(reshape(g, branch(g, *(end2end ? head.one2one_cv4 : head.cv4)[i], xs[i]),
                               {0, head.options.ne(), -1}));
    }
    const std::string level = concat(g, {box, cls}, 1);  // [B, no, h, w]
    flat.push_back(reshape(g, level, {0, no, -1}));
    if (shapes.dynamic) {
      auto [a, s] = level_anchors(g, level, head.stride[i]);
      anchors.push_back(a);
      strides.push_back(s);
    }
  }
  std::string anchor_points, stride_tensor, kpt_anchors, kpt_strides;  // the keypoints': [2, A] and [1, A]
  std::int64_t anchor_count = 0;
  if (shapes.dynamic) {
    anchor_points = kpt_anchors = concat(g, anchors, 1);
    stride_tensor = kpt_strides = concat(g, strides, 1);
  } else {
    std::vector<at::Tensor> feats;
    for (size_t i = 0; i < xs.size(); ++i) feats.push_back(at::zeros({1, 1, shapes.level_h[i], shapes.level_w[i]}));
    auto [points, st] = nn::make_anchors(feats, head.stride, 0.5);
    anchor_count = points.size(0);
    // [1, 2, A] and [1, 4, A]: the shapes of what they meet, as OpenCV's dnn (4.6) cannot
    // broadcast a constant over the box coordinates (it fails on [1, A] and [1, 1, A]).
    anchor_points = g.constant(points.t().unsqueeze(0).contiguous());
    stride_tensor = g.constant(st.t().unsqueeze(0).expand({1, 4, -1}).contiguous());
    if (nk > 0) kpt_anchors = g.constant(points.t().contiguous()), kpt_strides = g.constant(st.t().contiguous());
  }
  const std::string x_cat = concat(g, flat, 2);
  const std::string raw = slice(g, x_cat, 0, 4 * reg, 1);
  const std::string distances = reg > 1 ? dfl(g, *head.dfl, raw) : raw;  // reg_max 1: no DFL (YOLO26)
  // dist2bbox times the stride, as Detect's decode: xywh, or xyxy for the end-to-end head.
  const std::string lt = slice(g, distances, 0, 2, 1), rb = slice(g, distances, 2, 4, 1);
  std::string box, angle;
  if (rotated) {  // OBB.decode_bboxes: dist2rbox by the angle, xywh for both heads
    angle = decode_angle(g, head, angles);
    box = rotated_box(g, lt, rb, angle, anchor_points);
  } else {
    const std::string x1y1 = g.node("Sub", {anchor_points, lt});
    const std::string x2y2 = g.node("Add", {anchor_points, rb});
    if (end2end) {
      box = concat(g, {x1y1, x2y2}, 1);
    } else {
      const std::string sum = g.node("Add", {x1y1, x2y2});
      const std::string centre = g.node("Div", {sum, g.constant(std::vector<float>{2.0F}, {})});
      box = concat(g, {centre, g.node("Sub", {x2y2, x1y1})}, 1);
    }
  }
  const std::string dbox = g.node("Mul", {box, stride_tensor});
  const std::string scores = g.node("Sigmoid", {slice(g, x_cat, 4 * reg, no, 1)});
  std::vector<std::string> parts{dbox, scores};
  if (nm > 0) parts.push_back(concat(g, coefficients, 2));  // Segment._inference: cat(boxes, scores, coefficients)
  if (nk > 0) parts.push_back(decode_keypoints(g, head, concat(g, keypoints, 2), kpt_anchors, kpt_strides));
  if (rotated) parts.push_back(angle);  // OBB._inference: cat(boxes, scores, angle)
  if (!end2end) return concat(g, parts, 1, output);
  const std::string preds = g.node("Transpose", {concat(g, parts, 1)}, {{"perm", Ints{0, 2, 1}}});
  // Ultralytics exports k = max_det; fewer anchors than that (a tiny input) keep them all.
  const std::int64_t k = anchor_count > 0 ? std::min(head.options.max_det(), anchor_count) : head.options.max_det();
  const std::int64_t extra = nm > 0 ? nm : nk > 0 ? nk : rotated ? head.options.ne() : 0;  // after the class
  return end2end_topk(g, preds, head.options.nc(), extra, k, output);
}

}  // namespace yolotrain::exporter::detail
