#include "yolotrain/nn/detection_model.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>

#include <cmath>

#include "layer_row.hpp"
#include "yolotrain/nn/classify.hpp"
#include "yolotrain/nn/conv.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/nn/model_yaml.hpp"

namespace yolotrain::nn {
namespace {

bool builds_like_84(const std::string& version) {
  if (version == "8.4") return true;
  if (version == "8.3" || version == "8.2" || version == "8.1" || version == "8.0") return false;
  throw Error("DetectionModelOptions::ultralytics: '" + version +
              "' is no Ultralytics version yolotrain builds like; use \"8.4\" (the default) or \"8.3\" (8.0 to 8.3)");
}

}  // namespace

DetectionModelImpl::DetectionModelImpl(const DetectionModelOptions& options_) : options(options_) { reset(); }

void DetectionModelImpl::reset() {
  try {
    build();
    probe_and_initialise();
  } catch (const c10::Error& e) {  // e.g. channels that the groups do not divide, a map too small to probe
    throw Error("model " + options.model() + ": libtorch refuses the network it describes: " +
                e.what_without_backtrace());
  }
}

void DetectionModelImpl::build() {
  const ModelSource source = resolve_model(options.model());
  const detail::ModelDef def =
      detail::load_model_def(source.path, options.scale().empty() ? source.scale : options.scale(), options.nc(),
                             options.ch(), builds_like_84(options.ultralytics()), options.kpt_shape());
  yaml_path_ = def.path;
  strides_.clear();
  scale_ = def.scale;
  nc_ = def.nc;
  layers_.clear();
  model = register_module("model", torch::nn::ModuleList());
  std::vector<int64_t> ch;  // output channels of each layer
  for (const detail::LayerDef& row : def.layers) {
    const std::string ctx = detail::row_context(def, row);
    if (!layers_.empty() && layers_.back().kind->rules.head) {
      throw Error(ctx + "the head (" + layers_.back().kind->name + ") must be the last layer");
    }
    const LayerKind* kind = find_layer_kind(row.module);
    if (kind == nullptr && (row.module == "TorchVision" || row.module == "ResNetLayer")) {
      throw Error(ctx + row.module + " builds a torchvision (or ResNet) backbone, whose architecture and weights "
                  "come from torchvision, which yolotrain does not have; use a YOLO backbone (yolov8n-cls.yaml, "
                  "yolo11n-cls.yaml, yolo26n-cls.yaml)");
    }
    if (kind == nullptr) {
      throw Error(ctx + "unknown module '" + row.module + "'; yolotrain knows " + layer_kind_names());
    }
    if (!kind->rules.multi_input && (row.from.size() != 1 || row.from_list)) {
      throw Error(ctx + "takes one input, so 'from' must be an integer");
    }
    if (row.repeats > 1 && !kind->rules.takes_repeats) {
      throw Error(ctx + "repeats > 1 is only supported for the kinds that take a repeat count (C2f, C3k2, C2PSA)");
    }
    std::vector<int64_t> in;
    for (int64_t j : row.from) in.push_back(j < 0 ? def.ch : ch[static_cast<size_t>(j)]);
    const LayerKind::Built built = kind->build(detail::LayerRow(def, row, in));
    model->push_back(built.module);
    for (int64_t j : row.from) {
      if (j >= 0) layers_[static_cast<size_t>(j)].keep = true;
    }
    layers_.push_back(Layer{kind, row.from, false});
    ch.push_back(built.c2);
  }
  if (layers_.empty() || !layers_.back().kind->rules.head) {
    throw Error("model YAML " + def.path.string() +
                ": the last row of 'head' must be a Detect, Segment, Pose, OBB or Classify layer");
  }
  nc_ = classifier() ? classifier()->options.c2() : head()->options.nc();
  for (const auto& m : modules(/*include_self=*/false)) {
    if (auto* conv = m->as<ConvImpl>()) conv->counts_batches = false;
  }
}

void DetectionModelImpl::count_batch() {
  std::vector<at::Tensor> counts;
  for (const auto& m : modules(/*include_self=*/false)) {
    auto* conv = m->as<ConvImpl>();
    const bool counted_by_bn = conv && conv->bn && conv->bn->is_training() &&
                               conv->bn->options.track_running_stats() && conv->bn->num_batches_tracked.defined();
    if (counted_by_bn && conv->bn->options.momentum()) {
      counts.push_back(conv->bn->num_batches_tracked);
    }
  }
  if (!counts.empty()) at::_foreach_add_(counts, 1);
}

void DetectionModelImpl::probe_and_initialise() {
  // Ultralytics' ClassificationModel: stride [1] ("no stride constraints"), no probe, and torch's
  // own BatchNorm settings (eps 1e-5, momentum 0.1: it never calls initialize_weights).
  if (classifier()) {
    strides_ = {1.0};
    return;
  }
  // Ultralytics: strides from a forward of zeros(1, ch, 256, 256) with torch's default BatchNorm
  // settings, then bias_init(), then eps 1e-3 / momentum 0.03 on every BatchNorm2d. Up to 8.3 the
  // probe ran in train mode and left running_mean 0, running_var 0.9, num_batches_tracked 1 in
  // every BatchNorm; 8.4 runs it with the layers in eval mode ("avoid changing batch statistics").
  // The whole head runs, as Ultralytics' forward does (a Segment's Proto too).
  const bool was_training = is_training();
  train(!builds_like_84(options.ultralytics()));
  const int64_t s = 256;
  std::vector<at::Tensor> out;
  {
    torch::NoGradGuard no_grad;
    out = forward_heads(at::zeros({1, options.ch(), s, s})).one2many;
  }
  strides_.clear();
  for (const auto& o : out) strides_.push_back(static_cast<double>(s) / static_cast<double>(o.size(2)));
  head()->stride = strides_;
  head()->bias_init();
  for (const auto& m : modules(/*include_self=*/false)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2dImpl>()) {
      bn->options.eps(1e-3);
      bn->options.momentum(0.03);
    }
  }
  train(was_training);
}

Detect DetectionModelImpl::head() const {
  const auto& list = model.ptr();
  auto detect = std::dynamic_pointer_cast<DetectImpl>(list->ptr(list->size() - 1));
  if (!detect) {
    throw Error("model " + yaml_path_.filename().string() + " is a " + task() +
                " model: it has a Classify head and no detection head (Detect, Segment, Pose)");
  }
  return Detect(detect);
}

Classify DetectionModelImpl::classifier() const {
  const auto& list = model.ptr();
  return Classify(std::dynamic_pointer_cast<ClassifyImpl>(list->ptr(list->size() - 1)));
}

const std::vector<int64_t>& DetectionModelImpl::layer_inputs(size_t i) const {
  if (i >= layers_.size()) throw Error("DetectionModel: no layer " + std::to_string(i));
  return layers_[i].from;
}

std::vector<std::string> DetectionModelImpl::names() const {
  if (!options.names().empty()) return options.names();
  std::vector<std::string> names;
  for (int64_t i = 0; i < nc_; ++i) names.push_back(std::to_string(i));
  return names;
}

const LayerKind& DetectionModelImpl::layer_kind(size_t i) const {
  if (i >= layers_.size()) throw Error("DetectionModel: no layer " + std::to_string(i));
  return *layers_[i].kind;
}

int64_t DetectionModelImpl::max_stride() const {
  return std::max<int64_t>(strides_.empty() ? 0 : static_cast<int64_t>(strides_.back()), 32);
}

int64_t check_imgsz(int64_t imgsz, int64_t stride) { return (imgsz + stride - 1) / stride * stride; }

std::vector<at::Tensor> DetectionModelImpl::forward(const at::Tensor& x) {
  if (classifier()) return {forward_heads(x).logits};
  return head()->forward(head_inputs(x));
}

HeadOutputs DetectionModelImpl::forward_heads(const at::Tensor& x) {
  if (Classify c = classifier()) {
    const std::vector<at::Tensor> in = head_inputs(x);
    HeadOutputs out;
    out.logits = c->forward(in.size() == 1 ? in[0] : at::cat(in, 1));
    return out;
  }
  return head()->forward_heads(head_inputs(x));
}

std::vector<at::Tensor> DetectionModelImpl::head_inputs(const at::Tensor& x) {
  if (x.dim() != 4 || x.size(1) != options.ch()) {
    throw Error("DetectionModel::forward: expected an input [B, " + std::to_string(options.ch()) +
                ", H, W], got " + std::to_string(x.dim()) + "-d sizes " + c10::str(x.sizes()));
  }
  const int64_t max_stride = strides_.empty() ? 1 : static_cast<int64_t>(strides_.back());
  if (x.size(2) % max_stride != 0 || x.size(3) % max_stride != 0) {
    throw Error("DetectionModel::forward: input height and width must be multiples of the largest stride " +
                std::to_string(max_stride) + ", got " + std::to_string(x.size(2)) + "x" + std::to_string(x.size(3)));
  }
  if (is_training()) count_batch();
  std::vector<at::Tensor> saved(layers_.size());
  at::Tensor prev = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::vector<at::Tensor> in;
    for (int64_t j : layers_[i].from) in.push_back(j < 0 ? x : (j == static_cast<int64_t>(i) - 1 ? prev : saved[j]));
    if (layers_[i].kind->rules.head) return in;
    prev = layers_[i].kind->forward(*model[i], in);
    if (layers_[i].keep) saved[i] = prev;
  }
  throw Error("DetectionModel::forward: the model has no head (Detect, Segment, Pose, Classify) layer");
}

at::Tensor DetectionModelImpl::predict(const at::Tensor& x) {
  if (classifier()) return ClassifyImpl::probabilities(forward_heads(x).logits);
  return head()->inference(forward_heads(x));
}

void DetectionModelImpl::fuse() {
  fuse_convs(*this);
  fused_ = true;
}

}  // namespace yolotrain::nn
