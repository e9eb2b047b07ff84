#include "yolotrain/export/onnx_export.hpp"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cstdio>
#include <iostream>

#include "onnx_graph.hpp"
#include "onnx_modules.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/version.hpp"

namespace yolotrain::exporter {
namespace fs = std::filesystem;
using detail::OnnxGraph;

namespace {

constexpr int kMinOpset = 12;
constexpr int kMaxOpset = 17;  // the newest that libonnx 1.12's checker knows

void set_shape(onnx::ValueInfoProto& value, const std::string& name, const std::vector<std::int64_t>& dims,
               const std::vector<std::string>& symbols) {
  value.set_name(name);
  auto* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (!symbols[i].empty()) d->set_dim_param(symbols[i]);
    else d->set_dim_value(dims[i]);
  }
}

// Every layer in the order of the YAML, each reading the outputs of its `from` layers.
void emit_layers(OnnxGraph& g, nn::DetectionModelImpl& model, const detail::EmitContext& context) {
  std::vector<std::string> out(model.model->size());
  for (size_t i = 0; i < model.model->size(); ++i) {
    std::vector<std::string> in;
    for (std::int64_t j : model.layer_inputs(i)) in.push_back(j < 0 ? "images" : out[static_cast<size_t>(j)]);
    auto scope = g.scope("model." + std::to_string(i));
    const std::string& kind = model.layer_kind(i).name;
    const detail::KindEmitter emitter = detail::find_kind_emitter(kind);
    if (emitter == nullptr) throw Error("ONNX export: layer " + std::to_string(i) + " (" + kind + ") has no ONNX form");
    out[i] = emitter(g, *model.model[i], in, context);
  }
}

// A detection head's outputs: output0 (decoded boxes and scores, an end-to-end head's top-k rows;
// a Segment head's mask coefficients or a Pose head's keypoints as extra columns) and a Segment
// head's output1 (the prototypes at a quarter of the input).
void declare_detection_outputs(onnx::GraphProto& graph, nn::DetectionModelImpl& model,
                               const OnnxExportOptions& options, std::int64_t anchors) {
  const bool dyn = options.dynamic;
  const std::int64_t nm = model.head()->options.nm() > 0 ? model.head()->options.nm() : model.head()->nk();
  if (model.head()->end2end()) {  // Ultralytics 8.4: (N, max_det, 6 (+ nm)), no NMS
    const std::int64_t k = dyn ? model.head()->options.max_det() : std::min(model.head()->options.max_det(), anchors);
    set_shape(*graph.add_output(), "output0", {options.batch, k, 6 + nm}, {dyn ? "batch" : "", "", ""});
  } else {
    set_shape(*graph.add_output(), "output0", {options.batch, 4 + model.nc() + nm, anchors},
              {dyn ? "batch" : "", "", dyn ? "anchors" : ""});
  }
  if (model.head()->segments()) {
    set_shape(*graph.add_output(), "output1", {options.batch, nm, options.imgsz_h / 4, options.imgsz_w / 4},
              {dyn ? "batch" : "", "", dyn ? "mask_height" : "", dyn ? "mask_width" : ""});
  }
}

std::string names_repr(const std::vector<std::string>& names) {
  std::string s = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(i) + ": " + python_repr(names[i]);
  }
  return s + "}";
}

void add_metadata(onnx::ModelProto& proto, const std::vector<std::pair<std::string, std::string>>& props) {
  for (const auto& [key, value] : props) {
    auto* p = proto.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }
}

std::string pretty_name(const std::string& model_yaml) {
  std::string stem = fs::path(model_yaml).stem().string();
  if (stem.rfind("yolo", 0) == 0) stem.replace(0, 4, "YOLO");
  return stem;
}

}  // namespace

std::string python_repr(const std::string& text) {
  const bool has_single = text.find('\'') != std::string::npos;
  const char quote = has_single && text.find('"') == std::string::npos ? '"' : '\'';
  std::string s(1, quote);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      s += '\\';
      s += ch;
    } else if (ch == '\n') {
      s += "\\n";
    } else if (ch == '\r') {
      s += "\\r";
    } else if (ch == '\t') {
      s += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      s += buf;
    } else {
      s += ch;  // UTF-8 passes through, as Python 3 prints printable characters
    }
  }
  return s + quote;
}

std::string onnx_model(nn::DetectionModelImpl& model, const OnnxExportOptions& options, const OnnxMetadata& metadata) {
  if (options.opset < kMinOpset || options.opset > kMaxOpset) {
    throw Error("ONNX export: opset " + std::to_string(options.opset) + " is not supported; use " +
                std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  }
  if (!model.fused() || model.is_training()) throw Error("ONNX export: the model must be fused and in eval mode");
  const auto stride = static_cast<std::int64_t>(model.strides().back());
  if (options.imgsz_h <= 0 || options.imgsz_w <= 0 || options.imgsz_h % stride || options.imgsz_w % stride) {
    throw Error("ONNX export: imgsz " + std::to_string(options.imgsz_h) + "x" + std::to_string(options.imgsz_w) +
                " must be positive multiples of the stride " + std::to_string(stride));
  }
  if (options.batch < 1) throw Error("ONNX export: batch must be at least 1, got " + std::to_string(options.batch));
  c10::InferenceMode inference;

  onnx::ModelProto proto;
  proto.set_ir_version(onnx::IR_VERSION);
  proto.set_producer_name("yolotrain");
  proto.set_producer_version(version());
  proto.add_opset_import()->set_version(options.opset);
  onnx::GraphProto& graph = *proto.mutable_graph();
  graph.set_name("main_graph");

  detail::EmitContext context;
  context.output = "output0";
  context.proto_output = "output1";
  detail::DetectShapes& shapes = context.shapes;
  shapes.dynamic = options.dynamic;
  for (double s : model.strides()) {
    shapes.level_h.push_back(options.imgsz_h / static_cast<std::int64_t>(s));
    shapes.level_w.push_back(options.imgsz_w / static_cast<std::int64_t>(s));
  }
  std::int64_t anchors = 0;
  for (size_t i = 0; i < shapes.level_h.size(); ++i) anchors += shapes.level_h[i] * shapes.level_w[i];
  const bool dyn = options.dynamic;
  set_shape(*graph.add_input(), "images", {options.batch, 3, options.imgsz_h, options.imgsz_w},
            {dyn ? "batch" : "", "", dyn ? "height" : "", dyn ? "width" : ""});
  OnnxGraph g(graph);
  emit_layers(g, model, context);
  if (model.classifier()) {  // Ultralytics' Classify in export mode: the softmax, (N, nc)
    set_shape(*graph.add_output(), "output0", {options.batch, model.nc()}, {dyn ? "batch" : "", ""});
  } else {
    declare_detection_outputs(graph, model, options, anchors);
  }
  const std::string imgsz = "[" + std::to_string(options.imgsz_h) + ", " + std::to_string(options.imgsz_w) + "]";
  add_metadata(proto, {{"description", metadata.description},
                       {"author", "yolotrain"},
                       {"date", metadata.date},
                       {"version", version()},
                       {"stride", std::to_string(stride)},
                       {"task", model.task()},
                       {"batch", std::to_string(options.batch)},
                       {"imgsz", imgsz},
                       {"names", names_repr(metadata.names)}});
  if (!model.classifier() && model.head()->options.end2end()) {
    add_metadata(proto, {{"end2end", model.head()->end2end() ? "True" : "False"}});
  }
  if (!model.classifier() && model.head()->keypoints()) {  // Ultralytics' exporter: str(model.kpt_shape)
    const auto& k = model.head()->options.kpt_shape();
    add_metadata(proto, {{"kpt_shape", "[" + std::to_string(k[0]) + ", " + std::to_string(k[1]) + "]"}});
  }
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    throw Error(std::string("ONNX export: ONNX's checker refuses the graph (a yolotrain bug): ") + e.what());
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) throw Error("ONNX export: the model could not be serialised");
  return bytes;
}

OnnxExportReport export_onnx(const fs::path& weights, const fs::path& out, OnnxExportOptions options) {
  OnnxExportReport report;
  auto warn = [&](const std::string& message) {
    std::cerr << "export: WARNING " << message << std::endl;
    report.warnings.push_back(message);
  };
  if (options.half) {
    warn("half=true is not written to ONNX on the CPU (as Ultralytics); exporting float32");
    options.half = false;
  }
  const io::ModelWeights w = io::read_model_weights(weights);
  nn::DetectionModel model = io::build_model(w, weights.string());
  if (!options.end2end && !model->classifier()) model->head()->set_end2end(false);  // Ultralytics' end2end=False
  model->eval();
  model->fuse();
  const std::int64_t stride = model->max_stride();
  for (std::int64_t* side : {&options.imgsz_h, &options.imgsz_w}) {
    if (*side <= 0) throw Error("export: imgsz must be positive, got " + std::to_string(*side));
    const std::int64_t rounded = nn::check_imgsz(*side, stride);
    if (rounded != *side) {
      warn("imgsz=" + std::to_string(*side) + " must be a multiple of the max stride " + std::to_string(stride) +
           ", updating to " + std::to_string(rounded));
      *side = rounded;
    }
  }
  OnnxMetadata metadata;
  metadata.description = "yolotrain " + pretty_name(w.model_yaml) + " model";
  metadata.date = w.date;
  metadata.names = w.names;
  const std::string bytes = onnx_model(*model, options, metadata);
  lifecycle::atomic_write(out, bytes);
  report.path = out;
  report.bytes = bytes.size();
  report.imgsz_h = options.imgsz_h;
  report.imgsz_w = options.imgsz_w;
  return report;
}

}  // namespace yolotrain::exporter
