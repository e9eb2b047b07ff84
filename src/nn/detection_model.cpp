#include "yolotrain/nn/detection_model.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>

#include <cmath>

#include "model_def.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/nn/model_yaml.hpp"

namespace yolotrain::nn {
namespace {

using detail::LayerDef;
using detail::ModelDef;

// Reads args[i] of a row: absent or None gives `fallback`; the word "nc" means the model's nc.
class Args {
 public:
  Args(const ModelDef& def, const LayerDef& layer) : def_(def), layer_(layer) {}

  bool has(size_t i) const {
    if (i >= layer_.args.size()) return false;
    const YAML::Node& n = layer_.args[i];
    return !(n.IsNull() || (n.IsScalar() && (n.Scalar() == "None" || n.Scalar() == "null")));
  }
  int64_t integer(size_t i, int64_t fallback) const {
    if (!has(i)) return fallback;
    const YAML::Node& n = layer_.args[i];
    if (n.IsScalar() && n.Scalar() == "nc") return def_.nc;
    try {
      return n.as<int64_t>();
    } catch (const YAML::Exception&) {
      throw bad(i, "an integer");
    }
  }
  int64_t integer_in(size_t i, int64_t fallback, int64_t lo, int64_t hi) const {
    const int64_t v = integer(i, fallback);
    if (v < lo || v > hi) throw bad(i, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return v;
  }
  double real_in(size_t i, double fallback, double lo, double hi) const {
    const double v = real(i, fallback);
    if (!(v >= lo && v <= hi)) throw bad(i, "a number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return v;
  }
  double real(size_t i, double fallback) const {
    if (!has(i)) return fallback;
    try {
      return layer_.args[i].as<double>();
    } catch (const YAML::Exception&) {
      throw bad(i, "a number");
    }
  }
  bool boolean(size_t i, bool fallback) const {
    if (!has(i)) return fallback;
    try {
      return layer_.args[i].as<bool>();
    } catch (const YAML::Exception&) {
      throw bad(i, "True or False");
    }
  }
  std::string text(size_t i, const std::string& fallback) const {
    return has(i) && layer_.args[i].IsScalar() ? layer_.args[i].Scalar() : fallback;
  }
  // Output channels args[0], scaled as Ultralytics does (a value equal to nc is left alone).
  int64_t channels() const {
    if (!has(0)) throw Error(detail::row_context(def_, layer_) + "args[0] (output channels) is missing");
    const int64_t c2 = integer(0, 0);
    if (c2 < 1 || c2 > 65536) throw bad(0, "a channel count from 1 to 65536");
    if (c2 == def_.nc) return c2;
    const int64_t out = make_divisible(std::min(static_cast<double>(c2), def_.max_channels) * def_.width, 8);
    if (out > 65536) throw bad(0, "at most 65536 channels once scaled (width " + std::to_string(def_.width) + ")");
    return out;
  }
  Error bad(size_t i, const std::string& expected) const {
    return Error(detail::row_context(def_, layer_) + "args[" + std::to_string(i) + "] = " +
                 YAML::Dump(layer_.args[i]) + " should be " + expected);
  }

 private:
  const ModelDef& def_;
  const LayerDef& layer_;
};

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
  const ModelDef def = detail::load_model_def(source.path, options.scale().empty() ? source.scale : options.scale(),
                                              options.nc(), options.ch());
  yaml_path_ = def.path;
  strides_.clear();
  scale_ = def.scale;
  nc_ = def.nc;
  layers_.clear();
  model = register_module("model", torch::nn::ModuleList());
  std::vector<int64_t> ch;  // output channels of each layer
  auto in_ch = [&](int64_t j) { return j < 0 ? def.ch : ch[static_cast<size_t>(j)]; };
  for (const LayerDef& row : def.layers) {
    const Args args(def, row);
    const std::string ctx = detail::row_context(def, row);
    if (!layers_.empty() && layers_.back().kind == Kind::Detect) {
      throw Error(ctx + "Detect must be the last layer");
    }
    const bool single = row.from.size() == 1 && !row.from_list;
    if (row.module != "Concat" && row.module != "Detect" && !single) {
      throw Error(ctx + "takes one input, so 'from' must be an integer");
    }
    if (row.repeats > 1 && row.module != "C2f") {
      throw Error(ctx + "repeats > 1 is only supported for C2f");
    }
    const int64_t c1 = in_ch(row.from[0]);
    Layer layer{Kind::Conv, row.from, false};
    int64_t c2 = c1;
    if (row.module == "Conv") {
      c2 = args.channels();
      auto o = ConvOptions(c1, c2, args.integer_in(1, 1, 1, 31), args.integer_in(2, 1, 1, 32))
                    .g(args.integer_in(4, 1, 1, 65536))
                    .d(args.integer_in(5, 1, 1, 32));
      if (args.has(3)) o.p(args.integer_in(3, 0, 0, 31));
      o.act(args.boolean(6, true));
      model->push_back(Conv(o));
    } else if (row.module == "C2f") {
      layer.kind = Kind::C2f;
      c2 = args.channels();
      model->push_back(C2f(C2fOptions(c1, c2)
                               .n(row.repeats)
                               .shortcut(args.boolean(1, false))
                               .g(args.integer_in(2, 1, 1, 65536))
                               .e(args.real_in(3, 0.5, 0.01, 4))));
    } else if (row.module == "Bottleneck") {
      layer.kind = Kind::Bottleneck;
      c2 = args.channels();
      model->push_back(Bottleneck(BottleneckOptions(c1, c2)
                                      .shortcut(args.boolean(1, true))
                                      .g(args.integer_in(2, 1, 1, 65536))
                                      .e(args.real_in(4, 0.5, 0.01, 4))));
    } else if (row.module == "SPPF") {
      layer.kind = Kind::SPPF;
      c2 = args.channels();
      model->push_back(SPPF(SPPFOptions(c1, c2).k(args.integer_in(1, 5, 1, 31))));
    } else if (row.module == "Upsample") {
      layer.kind = Kind::Upsample;
      if (args.text(2, "nearest") != "nearest") throw Error(ctx + "only mode \"nearest\" is supported");
      if (args.has(0)) throw Error(ctx + "an output size is not supported; give [None, factor, \"nearest\"]");
      model->push_back(Upsample(args.real_in(1, 2.0, 1, 8)));
    } else if (row.module == "Concat") {
      layer.kind = Kind::Concat;
      const int64_t dim = args.integer(0, 1);
      if (dim != 1) throw Error(ctx + "only channel concatenation (dimension 1) is supported");
      c2 = 0;
      for (int64_t j : row.from) c2 += in_ch(j);
      model->push_back(Concat(dim));
    } else if (row.module == "Detect") {
      layer.kind = Kind::Detect;
      std::vector<int64_t> chs;
      for (int64_t j : row.from) chs.push_back(in_ch(j));
      model->push_back(Detect(DetectOptions(args.integer_in(0, def.nc, 1, 100000), chs)));
    } else {
      throw Error(ctx + "unknown module '" + row.module +
                  "'; yolotrain knows Conv, C2f, Bottleneck, SPPF, nn.Upsample, Concat and Detect");
    }
    for (int64_t j : row.from) {
      if (j >= 0) layers_[static_cast<size_t>(j)].keep = true;
    }
    layers_.push_back(layer);
    ch.push_back(c2);
  }
  if (layers_.empty() || layers_.back().kind != Kind::Detect) {
    throw Error("model YAML " + def.path.string() + ": the last row of 'head' must be a Detect layer");
  }
  nc_ = head()->options.nc();
}

void DetectionModelImpl::probe_and_initialise() {
  // Ultralytics: strides from a train-mode forward of zeros(1, ch, 256, 256) with torch's default
  // BatchNorm settings, then bias_init(), then eps 1e-3 / momentum 0.03 on every BatchNorm2d. The
  // probe leaves running_mean 0, running_var 0.9, num_batches_tracked 1 in every BatchNorm.
  const bool was_training = is_training();
  train(true);
  const int64_t s = 256;
  std::vector<at::Tensor> out;
  {
    torch::NoGradGuard no_grad;
    out = forward(at::zeros({1, options.ch(), s, s}));
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
  return Detect(std::dynamic_pointer_cast<DetectImpl>(list->ptr(list->size() - 1)));
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

at::Tensor DetectionModelImpl::run_layer(size_t i, const std::vector<at::Tensor>& in) {
  const auto& m = model[i];
  switch (layers_[i].kind) {
    case Kind::Conv: return m->as<ConvImpl>()->forward(in[0]);
    case Kind::C2f: return m->as<C2fImpl>()->forward(in[0]);
    case Kind::SPPF: return m->as<SPPFImpl>()->forward(in[0]);
    case Kind::Bottleneck: return m->as<BottleneckImpl>()->forward(in[0]);
    case Kind::Upsample: return m->as<UpsampleImpl>()->forward(in[0]);
    case Kind::Concat: return m->as<ConcatImpl>()->forward(in);
    case Kind::Detect: break;
  }
  throw Error("DetectionModel: layer " + std::to_string(i) + " cannot run here");
}

int64_t DetectionModelImpl::max_stride() const {
  return std::max<int64_t>(strides_.empty() ? 0 : static_cast<int64_t>(strides_.back()), 32);
}

int64_t check_imgsz(int64_t imgsz, int64_t stride) { return (imgsz + stride - 1) / stride * stride; }

std::vector<at::Tensor> DetectionModelImpl::forward(const at::Tensor& x) {
  if (x.dim() != 4 || x.size(1) != options.ch()) {
    throw Error("DetectionModel::forward: expected an input [B, " + std::to_string(options.ch()) +
                ", H, W], got " + std::to_string(x.dim()) + "-d sizes " + c10::str(x.sizes()));
  }
  const int64_t max_stride = strides_.empty() ? 1 : static_cast<int64_t>(strides_.back());
  if (x.size(2) % max_stride != 0 || x.size(3) % max_stride != 0) {
    throw Error("DetectionModel::forward: input height and width must be multiples of the largest stride " +
                std::to_string(max_stride) + ", got " + std::to_string(x.size(2)) + "x" + std::to_string(x.size(3)));
  }
  std::vector<at::Tensor> saved(layers_.size());
  at::Tensor prev = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::vector<at::Tensor> in;
    for (int64_t j : layers_[i].from) in.push_back(j < 0 ? x : (j == static_cast<int64_t>(i) - 1 ? prev : saved[j]));
    if (layers_[i].kind == Kind::Detect) return model[i]->as<DetectImpl>()->forward(in);
    prev = run_layer(i, in);
    if (layers_[i].keep) saved[i] = prev;
  }
  throw Error("DetectionModel::forward: the model has no Detect layer");
}

at::Tensor DetectionModelImpl::predict(const at::Tensor& x) { return head()->decode(forward(x)); }

void DetectionModelImpl::fuse() {
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& m = model[i];
    switch (layers_[i].kind) {
      case Kind::Conv: m->as<ConvImpl>()->fuse(); break;
      case Kind::C2f: m->as<C2fImpl>()->fuse(); break;
      case Kind::SPPF: m->as<SPPFImpl>()->fuse(); break;
      case Kind::Bottleneck: m->as<BottleneckImpl>()->fuse(); break;
      case Kind::Detect: m->as<DetectImpl>()->fuse(); break;
      default: break;
    }
  }
  fused_ = true;
}

}  // namespace yolotrain::nn
