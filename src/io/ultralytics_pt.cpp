#include "yolotrain/io/ultralytics_pt.hpp"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "has_suffix.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/io/torch_archive.hpp"
#include "yolotrain/nn/layer_kind.hpp"

namespace yolotrain::io {
namespace fs = std::filesystem;
using Kind = PickleValue::Kind;

namespace {

// The module classes of a detection model, torch's and Ultralytics' (by class name: 8.0 had them
// in ultralytics.nn.modules directly, 8.1+ in .conv / .block / .head); Ultralytics' are those the
// layer kinds accept (nn::LayerKind::pt_classes).
bool supported_module(const std::string& cls) {
  static const std::set<std::string> torch_modules = {
      "torch.nn.modules.conv.Conv2d",        "torch.nn.modules.conv.ConvTranspose2d",
      "torch.nn.modules.batchnorm.BatchNorm2d",
      "torch.nn.modules.activation.SiLU",    "torch.nn.modules.pooling.MaxPool2d",
      "torch.nn.modules.upsampling.Upsample", "torch.nn.modules.container.Sequential",
      "torch.nn.modules.container.ModuleList", "torch.nn.modules.linear.Identity",
      "torch.nn.modules.linear.Linear",      "torch.nn.modules.activation.Tanh",  // YOLO26-pose's RealNVP
      "torch.nn.modules.pooling.AdaptiveAvgPool2d", "torch.nn.modules.dropout.Dropout"};  // Classify
  static const std::set<std::string> yolo_modules = [] {
    std::set<std::string> names;
    for (const auto& kind : nn::layer_kinds()) names.insert(kind.pt_classes.begin(), kind.pt_classes.end());
    return names;
  }();
  if (torch_modules.count(cls)) return true;
  const auto dot = cls.rfind('.');
  return cls.rfind("ultralytics.nn.modules", 0) == 0 && dot != std::string::npos &&
         yolo_modules.count(cls.substr(dot + 1));
}

// Python's repr of a float: the shortest text that reads back to the same double.
std::string python_float(double f) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string s = buf;
  if (s.find_first_of(".einn") == std::string::npos) s += ".0";
  return s;
}

std::string as_text(const PickleRef& v) {
  switch (v->kind) {
    case Kind::None: return "None";
    case Kind::Bool: return v->b ? "True" : "False";
    case Kind::Int: return std::to_string(v->i);
    case Kind::Float: return python_float(v->f);
    case Kind::String: return v->s;
    case Kind::List:
    case Kind::Tuple: {
      std::string s = v->kind == Kind::List ? "[" : "(";
      for (std::size_t k = 0; k < v->items.size(); ++k) s += (k ? ", " : "") + as_text(v->items[k]);
      return s + (v->kind == Kind::List ? "]" : ")");
    }
    default: return "<" + v->describe() + ">";
  }
}

class ModelReader {
 public:
  explicit ModelReader(std::string name) : name_(std::move(name)) {}

  /// "8.3" or "8.4" from the SPPF's cv1 activation; empty before an SPPF was seen.
  const std::string& builds_like() const { return builds_like_; }

  // Pre-order as torch.nn.Module.state_dict(): own parameters, own persistent buffers, children.
  void collect(const PickleRef& module, const std::string& prefix, lifecycle::NamedTensors& out, int depth = 0) {
    const std::string cls = module->class_name();
    if (module->kind != Kind::Object || !module->state || module->state->kind != Kind::Dict) {
      throw Error(name_ + ": '" + prefix + "' is " + module->describe() + ", not a torch module");
    }
    if (depth > 0 && !supported_module(cls)) {
      throw Error(name_ + ": layer '" + prefix.substr(0, prefix.size() - 1) + "' is a " + cls +
                  ", which yolotrain does not implement (its layer kinds: " + nn::layer_kind_names() + ")");
    }
    if (depth > 32) throw Error(name_ + ": modules nested more than 32 deep");
    const PickleValue& state = *module->state;
    if (detail::has_suffix(cls, ".SPPF")) note_sppf(state, prefix);
    std::set<std::string> non_persistent;
    if (PickleRef np = state.get("_non_persistent_buffers_set"); np && np->kind == Kind::Set) {
      for (const auto& n : np->items) non_persistent.insert(n->s);
    }
    add_tensors(state.get("_parameters"), prefix, {}, out);
    add_tensors(state.get("_buffers"), prefix, non_persistent, out);
    const PickleRef children = state.get("_modules");
    if (!children || children->kind != Kind::Dict) throw Error(name_ + ": '" + prefix + "' has no _modules");
    for (const auto& [key, child] : children->dict) {
      if (!child->is_none()) collect(child, prefix + key->s + ".", out, depth + 1);
    }
  }

 private:
  void add_tensors(const PickleRef& dict, const std::string& prefix, const std::set<std::string>& skip,
                   lifecycle::NamedTensors& out) {
    if (!dict || dict->kind != Kind::Dict) throw Error(name_ + ": module '" + prefix + "' has no parameter dict");
    for (const auto& [key, value] : dict->dict) {
      if (value->is_none() || skip.count(key->s)) continue;
      if (value->kind != Kind::Tensor) throw Error(name_ + ": " + prefix + key->s + " is " + value->describe());
      out.emplace_back(prefix + key->s, value->tensor);
    }
  }

  // SPPF.cv1.act: SiLU up to 8.3, Identity since 8.4.0 (the state dict cannot tell them apart).
  void note_sppf(const PickleValue& sppf, const std::string& prefix) {
    const PickleRef modules = sppf.get("_modules");
    const PickleRef cv1 = modules && modules->kind == Kind::Dict ? modules->get("cv1") : nullptr;
    const PickleRef cv1_modules = cv1 && cv1->state ? cv1->state->get("_modules") : nullptr;
    const PickleRef act = cv1_modules && cv1_modules->kind == Kind::Dict ? cv1_modules->get("act") : nullptr;
    if (!act) throw Error(name_ + ": the SPPF '" + prefix + "' has no cv1.act");
    const std::string act_cls = act->class_name();
    if (detail::has_suffix(act_cls, ".SiLU")) builds_like_ = "8.3";
    else if (detail::has_suffix(act_cls, ".Identity")) builds_like_ = "8.4";
    else throw Error(name_ + ": the SPPF '" + prefix + "' has a cv1 activation " + act_cls + ", not SiLU or Identity");
  }

  std::string name_;
  std::string builds_like_;
};

std::vector<std::string> class_names(const PickleRef& names, const std::string& file) {
  std::vector<std::string> out;
  if (!names) return out;
  if (names->kind == Kind::List || names->kind == Kind::Tuple) {
    for (const auto& n : names->items) out.push_back(as_text(n));
    return out;
  }
  if (names->kind != Kind::Dict) throw Error(file + ": the model's names are " + names->describe());
  for (const auto& [k, v] : names->dict) {
    if (k->kind != Kind::Int || k->i != static_cast<std::int64_t>(out.size())) {
      throw Error(file + ": the model's names are not numbered 0, 1, 2, ...");
    }
    out.push_back(as_text(v));
  }
  return out;
}

}  // namespace

namespace {

UltralyticsCheckpoint from_archive(const PickleRef& root, const std::string& file);

}  // namespace

UltralyticsCheckpoint read_ultralytics_pt(const fs::path& path) {
  return from_archive(read_torch_archive(path), path.string());
}

UltralyticsCheckpoint read_ultralytics_pt_bytes(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  return from_archive(read_torch_archive_bytes(bytes, name), name);
}

namespace {

UltralyticsCheckpoint from_archive(const PickleRef& root, const std::string& file) {
  if (root->kind != Kind::Dict) {
    throw Error(file + ": holds " + root->describe() + ", not an Ultralytics checkpoint (a dict with 'model')");
  }
  UltralyticsCheckpoint out;
  PickleRef model = root->get("ema");
  out.source = "ema";
  if (!model || model->is_none()) {
    model = root->get("model");
    out.source = "model";
  }
  if (!model || model->is_none()) {
    throw Error(file + ": a torch.save dict without 'model' or 'ema': not an Ultralytics checkpoint (a bare "
                "state dict? export it as .safetensors instead)");
  }
  const std::string cls = model->class_name();
  // ultralytics.nn.tasks.DetectionModel, SegmentationModel, PoseModel, ClassificationModel and OBBModel
  // (not RTDETRDetectionModel, ...)
  const bool known = detail::has_suffix(cls, ".DetectionModel") || detail::has_suffix(cls, ".SegmentationModel") ||
                     detail::has_suffix(cls, ".PoseModel") || detail::has_suffix(cls, ".ClassificationModel") ||
                     detail::has_suffix(cls, ".OBBModel");
  if (cls.rfind("ultralytics.", 0) != 0 || !known) {
    throw Error(file + ": '" + out.source + "' is " + model->describe() +
                "; yolotrain reads detection, segmentation, pose, classification and OBB models "
                "(ultralytics.nn.tasks.DetectionModel, SegmentationModel, PoseModel, ClassificationModel, OBBModel: "
                "YOLOv8, YOLO11, YOLO26 and their -seg, -pose, -cls, -obb) only");
  }
  ModelReader reader(file);
  reader.collect(model, "", out.state_dict);
  out.builds_like = reader.builds_like();
  if (out.state_dict.empty()) throw Error(file + ": the model holds no tensors");
  const PickleValue& state = *model->state;
  out.names = class_names(state.get("names"), file);
  const PickleRef yaml = state.get("yaml");
  if (yaml && yaml->kind == Kind::Dict) {
    if (PickleRef s = yaml->get("scale"); s && s->kind == Kind::String) out.scale = s->s;
    if (PickleRef f = yaml->get("yaml_file"); f && f->kind == Kind::String) out.yaml_file = f->s;
    if (PickleRef nc = yaml->get("nc"); nc && nc->kind == Kind::Int) out.nc = nc->i;
    if (PickleRef k = yaml->get("kpt_shape"); k && (k->kind == Kind::List || k->kind == Kind::Tuple)) {
      for (const PickleRef& v : k->items) {
        if (v->kind == Kind::Int) out.kpt_shape.push_back(v->i);
      }
    }
  }
  if (PickleRef nc = state.get("nc"); nc && nc->kind == Kind::Int) out.nc = nc->i;
  if (out.nc == 0) out.nc = static_cast<std::int64_t>(out.names.size());
  if (out.names.empty()) {
    for (std::int64_t c = 0; c < out.nc; ++c) out.names.push_back(std::to_string(c));
  }
  if (static_cast<std::int64_t>(out.names.size()) != out.nc) {
    throw Error(file + ": the model has nc " + std::to_string(out.nc) + " but " + std::to_string(out.names.size()) +
                " class names");
  }
  if (out.scale.empty()) out.scale = scale_from_weights(out.state_dict, file);
  if (PickleRef args = root->get("train_args"); args && args->kind == Kind::Dict) {
    for (const auto& [k, v] : args->dict) out.train_args[as_text(k)] = as_text(v);
  }
  if (PickleRef v = root->get("version"); v && v->kind == Kind::String) out.version = v->s;
  if (PickleRef d = root->get("date"); d && d->kind == Kind::String) out.date = d->s;
  if (PickleRef e = root->get("epoch"); e && e->kind == Kind::Int) out.epoch = e->i;
  return out;
}

}  // namespace

}  // namespace yolotrain::io
