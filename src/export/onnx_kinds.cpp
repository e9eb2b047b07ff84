// The ONNX form of each layer kind, keyed by nn::LayerKind::name. A new kind adds its row here
// and its emit() in onnx_modules.cpp (docs/nn.md "Adding a layer kind").
#include <map>

#include "onnx_modules.hpp"

namespace yolotrain::exporter::detail {
namespace {

// A kind whose module reads one input and has an emit() overload.
template <class Impl>
std::string emit_one(OnnxGraph& g, torch::nn::Module& layer, const std::vector<std::string>& in, const EmitContext&) {
  return emit(g, *layer.as<Impl>(), in[0]);
}

std::string emit_concat(OnnxGraph& g, torch::nn::Module& layer, const std::vector<std::string>& in,
                        const EmitContext&) {
  return emit(g, *layer.as<nn::ConcatImpl>(), in);
}

std::string emit_detect(OnnxGraph& g, torch::nn::Module& layer, const std::vector<std::string>& in,
                        const EmitContext& context) {
  return emit(g, *layer.as<nn::DetectImpl>(), in, context.shapes, context.output);
}

// Segment / Segment26: the prototypes (output1), then the head with its mask coefficients (output0).
std::string emit_segment(OnnxGraph& g, torch::nn::Module& layer, const std::vector<std::string>& in,
                         const EmitContext& context) {
  auto& head = *layer.as<nn::DetectImpl>();
  {
    auto scope = g.scope("proto");
    emit(g, *head.proto, in, context.proto_output);
  }
  return emit(g, head, in, context.shapes, context.output);
}

std::string emit_classify(OnnxGraph& g, torch::nn::Module& layer, const std::vector<std::string>& in,
                          const EmitContext& context) {
  const std::string x = in.size() == 1 ? in[0] : g.node("Concat", in, {{"axis", std::int64_t{1}}});
  return emit(g, *layer.as<nn::ClassifyImpl>(), x, context.output);
}

}  // namespace

KindEmitter find_kind_emitter(const std::string& kind) {
  static const std::map<std::string, KindEmitter> emitters = {
      {"Conv", emit_one<nn::ConvImpl>},         {"DWConv", emit_one<nn::ConvImpl>},
      {"C2f", emit_one<nn::C2fImpl>},           {"C3k2", emit_one<nn::C2fImpl>},
      {"Bottleneck", emit_one<nn::BottleneckImpl>}, {"SPPF", emit_one<nn::SPPFImpl>},
      {"C2PSA", emit_one<nn::C2PSAImpl>},       {"Upsample", emit_one<nn::UpsampleImpl>},
      {"Concat", emit_concat},                  {"Detect", emit_detect},
      {"Segment", emit_segment},                {"Segment26", emit_segment},
      {"Pose", emit_detect},                    {"Pose26", emit_detect},  // the keypoints: in emit(DetectImpl)
      {"OBB", emit_detect},                     {"OBB26", emit_detect},   // the angle: in emit(DetectImpl)
      {"Classify", emit_classify}};
  const auto it = emitters.find(kind);
  return it == emitters.end() ? nullptr : it->second;
}

}  // namespace yolotrain::exporter::detail
