#include "yolotrain/engine/train_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <limits>
#include <regex>
#include <set>
#include <variant>

#include "arg_values.hpp"
#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/endpoint/listen_address.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/control/job_control.hpp"

namespace yolotrain::engine {
namespace {

using Member = std::variant<bool TrainConfig::*, std::int64_t TrainConfig::*, double TrainConfig::*,
                            std::string TrainConfig::*>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// One argument: where it lives, what it means, and what values it takes.
struct Spec {
  const char* name;
  Member member;
  const char* help;
  double min = -kInf;
  double max = kInf;
  std::vector<std::string> choices = {};  // strings: allowed values (lower case); empty = any
};

const std::vector<Spec>& specs() {
  using C = TrainConfig;
  static const std::vector<Spec> table = {
      {"task",
       &C::task,
       "detect | segment | pose | classify | obb; empty: the model's (the others: their defaults for model, "
       "data, project; classify also imgsz 224)",
       -kInf,
       kInf,
       {"detect", "segment", "pose", "classify", "obb"}},
      {"model", &C::model, "model YAML (yolov8n.yaml, a path) or weights to fine-tune (.pt/.ytckpt/.safetensors)"},
      {"data", &C::data,
       "dataset YAML, a folder of class folders (classification), or 'shapes' ('shapes-seg': polygons, "
       "'shapes-pose': keypoints, 'shapes-cls': classes, 'shapes-obb': oriented boxes) for the built-in synthetic "
       "dataset"},
      {"epochs", &C::epochs, "number of epochs to train", 1, 1e6},
      {"time", &C::time, "hours to train for, overriding epochs; 0 or None: no limit", 0, 1e5},
      {"patience", &C::patience, "epochs without improvement before stopping early", 0, 1e6},
      {"batch", &C::batch,
       "images per batch; -1: AutoBatch (60% of the GPU's memory); 0.xx: AutoBatch at that fraction", 1, 1e5},
      {"imgsz", &C::imgsz, "training image size (rounded up to a multiple of the model's max stride, 32)", 32, 8192},
      {"save", &C::save, "save checkpoints and results"},
      {"save_period", &C::save_period, "save epoch<N>.pt every N epochs; -1: off", -1, 1e6},
      {"cache", &C::cache, "cache decoded images: false | ram", -kInf, kInf, {"false", "ram"}},
      {"device", &C::device, "'' (GPU when available), cpu, cuda, cuda:N or N (a GPU index)"},
      {"workers", &C::workers, "data loader threads", 0, 256},
      {"project", &C::project, "folder of run folders"},
      {"name", &C::name, "run folder name (train, train2, ... unless exist_ok)"},
      {"exist_ok", &C::exist_ok, "reuse an existing run folder"},
      {"pretrained", &C::pretrained, "true | false | a weights file to start from"},
      {"cls_remap", &C::cls_remap, "fine-tuning: the pretrained class rows moved to the data's classes by name"},
      {"optimizer",
       &C::optimizer,
       "auto | SGD | Adam | AdamW | MuSGD",
       -kInf,
       kInf,
       {"auto", "sgd", "adam", "adamw", "musgd"}},
      {"seed", &C::seed, "random seed", 0, 4294967295.0},
      {"deterministic", &C::deterministic, "use deterministic algorithms"},
      {"compat",
       &C::compat,
       "Ultralytics version a model is built like: 8.4 | 8.3 (8.0 to 8.3)",
       -kInf,
       kInf,
       {"8.3", "8.4"}},
      {"single_cls", &C::single_cls, "train every class as one"},
      {"rect", &C::rect, "rectangular training batches"},
      {"cos_lr", &C::cos_lr, "cosine learning-rate schedule"},
      {"close_mosaic", &C::close_mosaic, "last epochs trained without mosaic", 0, 1e6},
      {"resume", &C::resume,
       "false | true (newest checkpoint of the run folder, or of remote=) | a checkpoint path | s3://BUCKET/PREFIX"},
      {"amp",
       &C::amp,
       "true: fp16 autocast + gradient scaler on CUDA (off on the CPU, as Ultralytics) | false | bf16: bfloat16 "
       "autocast (CPU or CUDA)",
       -kInf,
       kInf,
       {"true", "false", "bf16"}},
      {"fraction", &C::fraction, "fraction of the training set to use", 1e-9, 1},
      {"freeze", &C::freeze, "'' | N (freeze the first N layers) | layer indices 0,1,2"},
      {"multi_scale", &C::multi_scale, "vary each batch's imgsz by up to this fraction (0 off; true = 1.0)", 0, 1},
      {"device_step", &C::device_step,
       "the CPU trains with the step CUDA runs (dense assigner, no host reads of tensors): the step profile's"},
      {"cuda_graph",
       &C::cuda_graph,
       "auto: each step's forward, loss and backward replayed as a CUDA graph where shapes are static | true | false",
       -kInf,
       kInf,
       {"auto", "true", "false"}},
      {"val", &C::val, "validate each epoch"},
      {"iou", &C::iou, "NMS IoU threshold for validation", 0, 1},
      {"max_det", &C::max_det, "detections kept per image", 1, 1e6},
      {"end2end", &C::end2end, "val of an end-to-end head (YOLO26): its top-k (true) or NMS over one-to-many (false)"},
      {"overlap_mask", &C::overlap_mask,
       "segmentation: one index mask per image, larger instances first (true), or one mask per instance"},
      {"mask_ratio", &C::mask_ratio, "segmentation: masks at 1 / mask_ratio of the input size", 1, 64},
      {"plots", &C::plots,
       "write results.png, train_batch0-2.jpg and the final validation's pictures, curves and confusion_matrix.csv"},
      {"tensorboard", &C::tensorboard,
       "write TensorBoard events (events.out.tfevents.<time>.<host>) in the run folder: "
       "epoch metrics, per-step losses and lr, the run's pictures"},
      {"verbose", &C::verbose, "print a progress line per batch and the per-class table at the end"},
      {"lr0", &C::lr0, "initial learning rate", 1e-12, 10},
      {"lrf", &C::lrf, "final learning rate as a fraction of lr0", 0, 1},
      {"momentum", &C::momentum, "SGD momentum / Adam beta1", 0, 1},
      {"weight_decay", &C::weight_decay, "weight decay", 0, 1},
      {"warmup_epochs", &C::warmup_epochs, "warm-up epochs", 0, 1e4},
      {"warmup_momentum", &C::warmup_momentum, "warm-up initial momentum", 0, 1},
      {"warmup_bias_lr", &C::warmup_bias_lr, "warm-up initial bias learning rate", 0, 10},
      {"box", &C::box, "box loss gain", 0, 1e4},
      {"cls", &C::cls, "class loss gain", 0, 1e4},
      {"dfl", &C::dfl, "DFL loss gain", 0, 1e4},
      {"pose", &C::pose, "pose (keypoint location) loss gain (pose models)", 0, 1e4},
      {"kobj", &C::kobj, "keypoint objectness loss gain (pose models)", 0, 1e4},
      {"rle", &C::rle, "RLE loss gain (YOLO26-pose)", 0, 1e4},
      {"angle", &C::angle, "oriented angle loss gain (OBB models; Ultralytics 8.4)", 0, 1e4},
      {"nbs", &C::nbs, "nominal batch size (gradient accumulation)", 1, 1e5},
      {"hsv_h", &C::hsv_h, "hue augmentation (fraction)", 0, 1},
      {"hsv_s", &C::hsv_s, "saturation augmentation (fraction)", 0, 1},
      {"hsv_v", &C::hsv_v, "value augmentation (fraction)", 0, 1},
      {"degrees", &C::degrees, "rotation (+/- degrees)", 0, 180},
      {"translate", &C::translate, "translation (+/- fraction)", 0, 1},
      {"scale", &C::scale, "scale (+/- gain)", 0, 1},
      {"shear", &C::shear, "shear (+/- degrees)", 0, 180},
      {"perspective", &C::perspective, "perspective (+/- fraction)", 0, 0.001},
      {"flipud", &C::flipud, "vertical flip probability", 0, 1},
      {"fliplr", &C::fliplr, "horizontal flip probability", 0, 1},
      {"mosaic", &C::mosaic, "mosaic probability", 0, 1},
      {"mixup", &C::mixup, "mixup probability", 0, 1},
      {"copy_paste", &C::copy_paste,
       "segmentation: fraction of the instances CopyPaste pastes (mode mixup: its probability too)", 0, 1},
      {"copy_paste_mode",
       &C::copy_paste_mode,
       "copy_paste's source: flip (the sample mirrored) or mixup (another sample)",
       -kInf,
       kInf,
       {"flip", "mixup"}},
      {"erasing", &C::erasing, "classification: random erasing probability", 0, 0.9},
      {"auto_augment", &C::auto_augment,
       "classification: randaugment (torchvision's, in place of the colour jitter) | none (the colour jitter); "
       "augmix and autoaugment are not here"},
      {"dropout", &C::dropout, "classification: the Classify head's dropout probability", 0, 1},
      {"compile", &C::compile, "torch.compile's mode: libtorch has none, the step runs eagerly (cuda_graph= on CUDA)"},
      {"channels_last", &C::channels_last,
       "'' (NHWC on CUDA, NCHW on the CPU) | true (NHWC; on the CPU faster, less precise gradients) | false (NCHW)",
       -kInf, kInf,
       {"", "true", "false"}},
      {"augmentations", &C::augmentations, "Albumentations transforms: not in yolotrain (refused when set)"},
      {"distill_model", &C::distill_model, "knowledge distillation's teacher: not in yolotrain (refused when set)"},
      {"cutmix", &C::cutmix, "CutMix probability (a rectangle of another sample pasted with its boxes)", 0, 1},
      {"cls_pw", &C::cls_pw, "class weights' power: each class's loss x (1 / its instances) ^ cls_pw, mean 1; "
       "0: every class weighs the same", 0, 1},
      {"save_interval", &C::save_interval, "seconds between time-based checkpoints; 0: off", 0, 1e9},
      {"keep_last", &C::keep_last, "rotating checkpoints kept", 1, 1e6},
      {"pause_release",
       &C::pause_release,
       "on pause: cache (empty the CUDA cache) | offload (to host) | exit (75)",
       -kInf,
       kInf,
       {"cache", "offload", "exit"}},
      {"status_interval", &C::status_interval, "seconds between status.json progress writes", 0.01, 1e6},
      {"metrics_file", &C::metrics_file, "Prometheus textfile to keep up to date; '': off"},
      {"remote", &C::remote,
       "'' | s3://BUCKET/PREFIX: upload checkpoints, results.csv, args.yaml, status.json there "
       "(credentials and endpoint from AWS_* variables); resume=true then resumes from it; off: "
       "a resumed run stops mirroring"},
      {"remote_timeout", &C::remote_timeout, "seconds a stop waits for the final upload to the remote", 0, 1e6},
      {"control", &C::control,
       "'' | HOST:PORT: HTTP endpoint to pause/resume/stop/checkpoint the run and read its status and "
       "/metrics (127.0.0.1:PORT; any other address needs control_token_file; port 0: any free one)"},
      {"control_token_file", &C::control_token_file,
       "file holding the bearer token control= requires (e.g. a mounted Kubernetes Secret)"},
      {"control_per_rank", &C::control_per_rank,
       "torchrun: every rank listens on control='s PORT + LOCAL_RANK (default: rank 0 only)"},
      {"metrics_push", &C::metrics_push, "'' | http://HOST:PORT: push the figures to a Prometheus Pushgateway"},
      {"metrics_push_interval", &C::metrics_push_interval, "seconds between pushes (and one at each epoch end)", 1,
       1e6},
      {"metrics_push_job", &C::metrics_push_job, "the pushed group's job label (its instance: the run's name)"},
      {"preemption",
       &C::preemption,
       "off | auto | aws | gcp | azure: read the cloud's reclaim notices from its metadata server; checkpoint at "
       "once, stop with a checkpoint (exit 75) before the deadline (auto: the cloud the DMI strings name)",
       -kInf,
       kInf,
       {"off", "auto", "aws", "gcp", "azure"}},
      {"preemption_interval", &C::preemption_interval, "seconds between two reads of the cloud's metadata server",
       0.05, 3600},
      {"deadline", &C::deadline, "stop with a checkpoint and exit 75 at: 90m, 2h30m, 3600s, HH:MM or YYYY-MM-DDTHH:MM"},
      {"threads", &C::threads, "intra-op threads; 0: one per core (per rank: cores / ranks on the machine)", 0, 1024},
      {"dist_timeout", &C::dist_timeout,
       "multi-process runs: seconds a rank waits for the others (longer than rank 0's validation)", 1, 1e6},
      {"signal_stop", &C::signal_stop, "signals that stop gracefully"},
      {"signal_pause", &C::signal_pause, "signals that pause"},
      {"signal_resume", &C::signal_resume, "signals that resume"},
      {"signal_checkpoint", &C::signal_checkpoint, "signals that write a checkpoint now"},
      {"signal_suspend", &C::signal_suspend, "signals that pause then suspend the process (fg resumes)"},
  };
  return table;
}

const Spec* find_spec(const std::string& key) {
  for (const auto& s : specs()) {
    if (key == s.name) return &s;
  }
  return nullptr;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

using args::is_none;

[[noreturn]] void bad_value(const Spec& spec, const std::string& value, const std::string& allowed) {
  throw ConfigError("argument '" + std::string(spec.name) + "': '" + value + "' is not valid; " + allowed);
}

std::string number_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string range_text(const Spec& s) {
  return "expected a number in [" + number_text(s.min) + ", " + number_text(s.max) + "]";
}

bool parse_bool(const Spec& spec, const std::string& v) { return args::to_bool(spec.name, v); }

std::int64_t parse_int(const Spec& spec, const std::string& v) {
  std::int64_t out = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) bad_value(spec, v, "expected an integer");
  if (out < spec.min || out > spec.max) bad_value(spec, v, range_text(spec));
  return out;
}

double parse_double(const Spec& spec, const std::string& v) {
  if (std::string(spec.name) == "time" && is_none(v)) return 0;
  if (std::string(spec.name) == "multi_scale") {  // 8.4's fraction, once a bool: Python reads True as 1
    if (lower(v) == "true") return 1.0;
    if (lower(v) == "false" || is_none(v)) return 0.0;
  }
  char* end = nullptr;
  const double out = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(out)) bad_value(spec, v, "expected a number");
  if (out < spec.min || out > spec.max) bad_value(spec, v, range_text(spec));
  return out;
}

std::string parse_string(const Spec& spec, const std::string& v) {
  const std::string key = spec.name;
  if (key == "resume" || key == "pretrained" || key == "cache" || key == "amp" || key == "cuda_graph" ||
      key == "compile" || key == "channels_last") {
    const std::string l = lower(v);
    if (l == "true" || l == "false") return key == "cache" && l == "true" ? "ram" : l;
    if (is_none(v)) return key == "channels_last" ? "" : "false";
  }
  if (is_none(v)) return "";
  if (spec.choices.empty()) return v;
  const std::string l = lower(v);
  for (const auto& c : spec.choices) {
    if (l == c)
      return key == "optimizer" ? (l == "sgd"     ? "SGD"
                                      : l == "adam"  ? "Adam"
                                      : l == "adamw" ? "AdamW"
                                      : l == "musgd" ? "MuSGD"
                                                     : l)
                                   : l;
  }
  std::string allowed;
  for (const auto& c : spec.choices) allowed += (allowed.empty() ? "" : ", ") + c;
  bad_value(spec, v, "expected one of: " + allowed);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

int signal_number(const std::string& key, const std::string& name) {
  std::string n = name;
  if (n.rfind("SIG", 0) != 0 && !n.empty() && !std::isdigit(static_cast<unsigned char>(n[0]))) n = "SIG" + n;
  for (int s = 1; s < 65; ++s) {
    const char* abbrev = sigabbrev_np(s);
    if (abbrev != nullptr && n == std::string("SIG") + abbrev) return s;
  }
  try {
    const int s = std::stoi(name);
    if (s > 0 && s < 65) return s;
  } catch (...) {
  }
  throw ConfigError("argument '" + key + "': '" + name + "' is not a signal name (e.g. SIGUSR1)");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text + ",") {
    if (c == ',' || c == ' ') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item.push_back(c);
    }
  }
  return out;
}

std::string scalar_text(const YAML::Node& node) {
  if (node.IsNull()) return "None";
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) {
    std::string out;
    for (const auto& item : node) out += (out.empty() ? "" : ",") + scalar_text(item);
    return out;
  }
  throw ConfigError("a mapping is not a valid argument value");
}

}  // namespace

std::vector<std::string> closest_keys(const std::string& key, std::size_t n) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& s : specs()) {
    const std::string name = s.name;
    const bool prefix = name.rfind(key, 0) == 0 || key.rfind(name, 0) == 0;
    const std::size_t d = prefix ? 0 : edit_distance(key, name);
    if (d <= std::max<std::size_t>(2, key.size() / 3)) scored.emplace_back(d, name);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < n; ++i) out.push_back(scored[i].second);
  return out;
}

namespace {

// Ultralytics 8.4's arguments yolotrain takes but cannot honour: refused by name, saying why and what
// to use instead, so that a run never trains other than its command line says.
void refuse_unsupported(const std::string& key, const std::string& value, const TrainConfig& c) {
  if (key == "augmentations" && !c.augmentations.empty()) {
    throw ConfigError("augmentations=" + value + ": Ultralytics takes Albumentations transforms (Python "
                      "objects) there; yolotrain has no Albumentations. Its own augmentations are set by "
                      "hsv_h, hsv_s, hsv_v, degrees, translate, scale, shear, perspective, flipud, fliplr, mosaic, "
                      "mixup and copy_paste");
  }
  if (key == "distill_model" && !c.distill_model.empty()) {
    throw ConfigError("distill_model=" + value + ": knowledge distillation from a teacher model is not in "
                      "yolotrain; train without it (distill_model=None)");
  }
}

}  // namespace

void TrainConfig::set(const std::string& key, const std::string& value) {
  if (key == "batch") return set_batch(value);
  const Spec* spec = find_spec(key);
  if (spec == nullptr) {
    std::string hint;
    for (const auto& k : closest_keys(key)) hint += (hint.empty() ? "" : ", ") + k + "=" + TrainConfig().get(k);
    throw ConfigError("'" + key + "' is not a valid argument" +
                (hint.empty() ? std::string("; see --help for the list") : "; similar arguments: " + hint));
  }
  std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(this->*member)>;
        if constexpr (std::is_same_v<T, bool>) this->*member = parse_bool(*spec, value);
        if constexpr (std::is_same_v<T, std::int64_t>) this->*member = parse_int(*spec, value);
        if constexpr (std::is_same_v<T, double>) this->*member = parse_double(*spec, value);
        if constexpr (std::is_same_v<T, std::string>) this->*member = parse_string(*spec, value);
      },
      spec->member);
  if (key == "task" && !task.empty() && task != "detect") use_task_defaults();
  refuse_unsupported(key, value, *this);
  if (key == "auto_augment" && !auto_augment.empty() && auto_augment != "randaugment") {
    throw ConfigError("auto_augment=" + value + ": yolotrain has randaugment (Ultralytics' default) and none, not " +
                      value + " (torchvision's " + value + " policy is not reproduced here); use "
                      "auto_augment=randaugment, or auto_augment=None for the colour jitter (hsv_h, hsv_s, hsv_v)");
  }
}

// task=segment, pose or classify: the defaults that name detection's model, data and folder become
// the task's (classify: imgsz 224 too, as Ultralytics' ClassificationTrainer sets when none is given).
void TrainConfig::use_task_defaults() {
  const TrainConfig d;
  const std::string suffix = task == "segment" ? "seg" : task == "pose" ? "pose" : task == "obb" ? "obb" : "cls";
  if (model == d.model) model = "yolov8n-" + suffix + ".yaml";
  if (data == d.data) data = "shapes-" + suffix;
  if (project == d.project) project = "runs/" + task;
  if (task == "classify" && imgsz == d.imgsz) imgsz = 224;
}

// Ultralytics' batch: an integer >= 1, -1 for AutoBatch at 60 % of the GPU's memory, or a
// fraction in (0, 1) for AutoBatch at that fraction.
void TrainConfig::set_batch(const std::string& value) {
  const Spec& spec = *find_spec("batch");
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  const bool number = !value.empty() && end == value.c_str() + value.size() && std::isfinite(v);
  const std::string allowed =
      "expected images per batch (1 to 100000), -1 (AutoBatch: 60% of the GPU's memory) or a fraction between 0 "
      "and 1 (AutoBatch at that fraction)";
  if (number && v == -1) {
    autobatch = 0.6;
  } else if (number && v > 0 && v < 1) {
    autobatch = v;
  } else if (number && v >= 1 && v <= spec.max && v == std::floor(v)) {
    batch = static_cast<std::int64_t>(v);
    autobatch = 0;
  } else {
    bad_value(spec, value, allowed);
  }
}

std::string TrainConfig::get(const std::string& key) const {
  if (key == "batch" && autobatch > 0) return autobatch == 0.6 ? "-1" : number_text(autobatch);
  const Spec* spec = find_spec(key);
  if (spec == nullptr) throw ConfigError("'" + key + "' is not a valid argument");
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::decay_t<decltype(this->*member)>;
        if constexpr (std::is_same_v<T, bool>) return this->*member ? "true" : "false";
        if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(this->*member);
        if constexpr (std::is_same_v<T, double>) return number_text(this->*member);
        if constexpr (std::is_same_v<T, std::string>) return this->*member;
      },
      spec->member);
}

void TrainConfig::load_yaml(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot read config " + path + ": no such file or not readable");
  std::ostringstream text;
  text << in.rdbuf();
  load_yaml_text(text.str(), "config " + path);
}

void TrainConfig::load_yaml_text(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) throw ConfigError(source + " must be a mapping of key: value");
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    try {
      set(key, scalar_text(item.second));
    } catch (const Error& e) {
      throw ConfigError(source + " (line " + std::to_string(item.first.Mark().line + 1) + "): " + e.what());
    }
  }
}

std::string TrainConfig::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& s : specs()) {
    out << YAML::Key << s.name << YAML::Value;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(this->*member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            out << YAML::DoubleQuoted << this->*member;
          } else {
            out << get(s.name);
          }
        },
        s.member);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void TrainConfig::validate() const {
  if (save_period == 0)
    throw ConfigError("argument 'save_period': 0 is not valid; -1 (off) or a number of epochs >= 1");
  signal_mapping();
  deadline_at(std::chrono::system_clock::now());
  validate_control();
}

// control=, control_token_file= and metrics_push=: checked before anything starts (exit 2); the
// token is read to check it and not kept (args.yaml names the file, never the token).
void TrainConfig::validate_control() const {
  if (!control.empty()) {
    endpoint::ListenAddress address;
    try {
      address = endpoint::parse_listen_address(control);
    } catch (const Error& e) {
      throw ConfigError("control=" + control + ": " + e.what());
    }
    if (!address.loopback() && control_token_file.empty()) {
      throw ConfigError("control=" + control +
                        " listens beyond this machine: give control_token_file=FILE (a bearer token, e.g. a "
                        "mounted Kubernetes Secret), or listen on 127.0.0.1");
    }
  }
  if (!control_token_file.empty()) {
    if (control.empty()) throw ConfigError("control_token_file= is the token of control=HOST:PORT; give control= too");
    try {
      endpoint::read_token_file(control_token_file);
    } catch (const Error& e) {
      throw ConfigError(e.what());
    }
  }
  if (!metrics_push.empty() && metrics_push.rfind("http://", 0) != 0 && metrics_push.rfind("https://", 0) != 0) {
    throw ConfigError("metrics_push=" + metrics_push +
                      ": give the Pushgateway's URL, http://HOST:PORT (default port 9091)");
  }
}

TrainConfig TrainConfig::from_args(const std::vector<std::string>& args) {
  TrainConfig config;
  for (const auto& a : args) {
    if (a.rfind("cfg=", 0) == 0) config.load_yaml(a.substr(4));
  }
  for (const auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("'" + a + "' is not key=value; arguments look like epochs=10 imgsz=320 (see --help)");
    }
    const std::string key = a.substr(0, eq);
    if (key == "cfg") continue;
    config.set(key, a.substr(eq + 1));
  }
  config.validate();
  return config;
}

std::vector<TrainConfig::ArgInfo> TrainConfig::describe() {
  const TrainConfig defaults;
  std::vector<ArgInfo> out;
  for (const auto& s : specs()) out.push_back({s.name, defaults.get(s.name), s.help});
  return out;
}

lifecycle::SignalMapping TrainConfig::signal_mapping() const {
  using lifecycle::SignalAction;
  const std::vector<std::pair<std::string, SignalAction>> groups = {
      {"signal_stop", SignalAction::Stop},           {"signal_pause", SignalAction::Pause},
      {"signal_resume", SignalAction::Resume},       {"signal_checkpoint", SignalAction::Checkpoint},
      {"signal_suspend", SignalAction::Suspend}};
  lifecycle::SignalMapping mapping;
  for (const auto& [key, action] : groups) {
    for (const auto& name : split_list(get(key))) {
      const int signo = signal_number(key, name);
      if (signo == SIGKILL || signo == SIGSTOP)
        throw ConfigError("argument '" + key + "': " + name + " cannot be caught");
      if (action == SignalAction::Suspend && !lifecycle::job_control::can_suspend(signo)) {
        throw ConfigError("argument '" + key + "': " + name +
                          " cannot suspend: only SIGTSTP, SIGTTIN and SIGTTOU can (their default action stops the "
                          "process, and the kernel keeps them in order with SIGCONT); use signal_pause for others");
      }
      if (!mapping.emplace(signo, action).second) {
        throw ConfigError("argument '" + key + "': " + name +
                          " is already given another meaning by another signal_ argument");
      }
    }
  }
  return mapping;
}

std::optional<std::chrono::system_clock::time_point> TrainConfig::deadline_at(
    std::chrono::system_clock::time_point now) const {
  if (deadline.empty()) return std::nullopt;
  const auto fail = [&] {
    return ConfigError("argument 'deadline': '" + deadline +
                 "' is not valid; expected a duration (90m, 2h30m, 3600s), a clock time HH:MM, or "
                 "YYYY-MM-DDTHH:MM[:SS] (local time; a trailing Z means UTC)");
  };
  std::smatch m;
  if (std::regex_match(deadline, std::regex(R"(((\d+(\.\d+)?)(h|m|s))+)"))) {
    double seconds = 0;
    const std::regex part(R"((\d+(?:\.\d+)?)(h|m|s))");
    for (auto it = std::sregex_iterator(deadline.begin(), deadline.end(), part); it != std::sregex_iterator(); ++it) {
      const double v = std::stod((*it)[1].str());
      const char unit = (*it)[2].str()[0];
      seconds += v * (unit == 'h' ? 3600 : unit == 'm' ? 60 : 1);
    }
    return now +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds));
  }
  std::tm tm{};
  const std::time_t now_t = std::chrono::system_clock::to_time_t(now);
  if (std::regex_match(deadline, m, std::regex(R"((\d{1,2}):(\d{2}))"))) {
    localtime_r(&now_t, &tm);
    tm.tm_hour = std::stoi(m[1]);
    tm.tm_min = std::stoi(m[2]);
    tm.tm_sec = 0;
    if (tm.tm_hour > 23 || tm.tm_min > 59) throw fail();
    auto at = std::chrono::system_clock::from_time_t(std::mktime(&tm));
    if (at <= now) at += std::chrono::hours(24);
    return at;
  }
  if (std::regex_match(deadline, m, std::regex(R"((\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?(Z?))"))) {
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    tm.tm_hour = std::stoi(m[4]);
    tm.tm_min = std::stoi(m[5]);
    tm.tm_sec = m[6].matched ? std::stoi(m[6]) : 0;
    tm.tm_isdst = -1;
    const std::time_t t = m[7].length() > 0 ? timegm(&tm) : std::mktime(&tm);
    if (t == -1) throw fail();
    return std::chrono::system_clock::from_time_t(t);
  }
  throw fail();
}

}  // namespace yolotrain::engine
