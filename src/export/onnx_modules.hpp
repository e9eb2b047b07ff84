#pragma once

// The ONNX nodes of each of yolotrain's modules (fused for inference): each function adds the
// module's nodes to the graph, in the module's own scope, and returns its output's name. Every
// node choice is valid unchanged from opset 12 to 17 (docs/export.md says why each was chosen).

#include <string>
#include <vector>

#include "onnx_graph.hpp"
#include "yolotrain/nn/attention.hpp"
#include "yolotrain/nn/block.hpp"
#include "yolotrain/nn/classify.hpp"
#include "yolotrain/nn/conv.hpp"
#include "yolotrain/nn/detect.hpp"
#include "yolotrain/nn/proto.hpp"

namespace yolotrain::exporter::detail {

/// Conv2d (with the BatchNorm folded in) then SiLU as Sigmoid and Mul.
std::string emit(OnnxGraph& g, nn::ConvImpl& conv, const std::string& x);
/// cv1, cv2 and the residual Add.
std::string emit(OnnxGraph& g, nn::BottleneckImpl& block, const std::string& x);
/// cv1, its two halves as Slices, the blocks (Bottleneck or C3k), Concat, cv2 (C2f and C3k2).
std::string emit(OnnxGraph& g, nn::C2fImpl& block, const std::string& x);
/// cv1 then the bottlenecks, cv2, Concat, cv3.
std::string emit(OnnxGraph& g, nn::C3kImpl& block, const std::string& x);
/// qkv, per-head Reshape and Slices, MatMul / Softmax / MatMul, the depthwise pe, Add, proj.
std::string emit(OnnxGraph& g, nn::AttentionImpl& attention, const std::string& x);
/// x + attn(x), then + ffn.
std::string emit(OnnxGraph& g, nn::PSABlockImpl& block, const std::string& x);
/// cv1, its halves, the PSABlocks on the second, Concat, cv2.
std::string emit(OnnxGraph& g, nn::C2PSAImpl& block, const std::string& x);
/// cv1, three MaxPools, Concat, cv2.
std::string emit(OnnxGraph& g, nn::SPPFImpl& block, const std::string& x);
/// Resize, nearest, as PyTorch's interpolate (asymmetric coordinates, floor).
std::string emit(OnnxGraph& g, nn::UpsampleImpl& upsample, const std::string& x);
/// Concat along its dimension.
std::string emit(OnnxGraph& g, nn::ConcatImpl& concat, const std::vector<std::string>& xs);

/// How Detect finds its anchors: constants for a fixed input size, computed from each level's
/// shape when height and width are dynamic.
struct DetectShapes {
  bool dynamic = false;
  std::vector<std::int64_t> level_h, level_w;  ///< feature map sizes (static export)
};

/// What every layer kind's emitter gets besides its module and inputs.
struct EmitContext {
  DetectShapes shapes;
  std::string output;  ///< the graph output's name (for the head)
  std::string proto_output;  ///< a segmentation head's prototypes' graph output (Ultralytics' output1)
};

/// The ONNX form of one layer kind (keyed by nn::LayerKind::name): adds the layer's nodes, returns
/// its output's name.
using KindEmitter = std::string (*)(OnnxGraph& g, torch::nn::Module& layer, const std::vector<std::string>& inputs,
                                    const EmitContext& context);

/// The emitter of layer kind `kind` (src/export/onnx_kinds.cpp), or nullptr when it has no ONNX form.
KindEmitter find_kind_emitter(const std::string& kind);

/// Ultralytics' Classify as exported: Conv, GlobalAveragePool, Flatten, Gemm (the Linear) and the
/// softmax over the classes, written to `output` as [B, nc].
std::string emit(OnnxGraph& g, nn::ClassifyImpl& head, const std::string& x, const std::string& output);

/// The decoded head: per level the box and class branches (and a Segment head's mask
/// coefficients), then over all anchors DFL, dist2bbox (xywh, times the stride) and the class
/// sigmoid, written to `output` as [B, 4 + nc (+ nm), A]; an end-to-end head's top-k as
/// [B, k, 6 (+ nm)].
std::string emit(OnnxGraph& g, nn::DetectImpl& head, const std::vector<std::string>& xs, const DetectShapes& shapes,
                 const std::string& output);

/// A segmentation head's Proto (Proto26 too) on the head's inputs `xs`, written to `output` as the
/// prototypes [B, nm, 2 * H3, 2 * W3] (src/export/onnx_proto.cpp).
std::string emit(OnnxGraph& g, nn::ProtoImpl& proto, const std::vector<std::string>& xs, const std::string& output);

}  // namespace yolotrain::exporter::detail
