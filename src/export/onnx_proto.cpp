// The ONNX form of a segmentation head's prototypes: Ultralytics' Proto (Conv 3x3, ConvTranspose2d
// 2x2 stride 2, Conv 3x3, Conv 1x1) and Proto26 (every level refined to P3's channels, upsampled
// by nearest and summed onto P3, feat_fuse, then Proto's layers; its semantic branch only trains).
#include <ATen/ATen.h>

#include "onnx_modules.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/torch_compat.hpp"

namespace yolotrain::exporter::detail {
namespace {

using Ints = std::vector<std::int64_t>;

std::string scoped_conv(OnnxGraph& g, const std::string& name, nn::ConvImpl& conv, const std::string& x) {
  auto scope = g.scope(name);
  return emit(g, conv, x);
}

// torch's ConvTranspose2d (groups 1, no padding, no output padding, dilation 1).
std::string conv_transpose(OnnxGraph& g, torch::nn::ConvTranspose2dImpl& up, const std::string& x) {
  auto scope = g.scope("upsample");
  const auto& o = up.options;
  const auto k = *o.kernel_size(), s = *o.stride();
  const auto* pad = torch_compat::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (o.groups() != 1 || pad == nullptr || (**pad)[0] != 0 || (**pad)[1] != 0 || !up.bias.defined()) {
    throw Error("ONNX export: Proto's upsample is written only as Ultralytics builds it (groups 1, no padding, bias)");
  }
  return g.node("ConvTranspose", {x, g.weight("weight", up.weight), g.weight("bias", up.bias)},
                {{"kernel_shape", Ints{k[0], k[1]}}, {"strides", Ints{s[0], s[1]}}, {"pads", Ints{0, 0, 0, 0}}});
}

// F.interpolate(x, scale_factor=s, mode="nearest"): each pixel repeated s x s times.
std::string nearest(OnnxGraph& g, const std::string& x, float s) {
  const std::string roi = g.constant(at::empty({0}, at::kFloat));
  return g.node("Resize", {x, roi, g.constant(std::vector<float>{1, 1, s, s}, {4})},
                {{"coordinate_transformation_mode", std::string("asymmetric")},
                 {"mode", std::string("nearest")},
                 {"nearest_mode", std::string("floor")}});
}

}  // namespace

std::string emit(OnnxGraph& g, nn::ProtoImpl& proto, const std::vector<std::string>& xs, const std::string& output) {
  std::string x = xs.at(0);
  if (proto.options.multi_scale()) {  // Proto26
    auto refine = g.scope("feat_refine");
    for (std::size_t i = 0; i < proto.feat_refine->size(); ++i) {
      const std::string refined =
          scoped_conv(g, std::to_string(i), *proto.feat_refine[i]->as<nn::ConvImpl>(), xs.at(i + 1));
      x = g.node("Add", {x, nearest(g, refined, static_cast<float>(2 << i))});
    }
  }
  if (proto.options.multi_scale()) x = scoped_conv(g, "feat_fuse", *proto.feat_fuse, x);
  const std::string y = conv_transpose(g, *proto.upsample, scoped_conv(g, "cv1", *proto.cv1, x));
  const std::string z = scoped_conv(g, "cv2", *proto.cv2, y);
  auto scope = g.scope("cv3");
  const std::string protos = emit(g, *proto.cv3, z);
  return g.node("Identity", {protos}, {}, output);
}

}  // namespace yolotrain::exporter::detail
