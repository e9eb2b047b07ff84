#include "yolotrain/io/model_weights.hpp"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "has_suffix.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/io/ultralytics_pt.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/nn/weights.hpp"

namespace yolotrain::io {
namespace fs = std::filesystem;
namespace lc = lifecycle;

namespace {

std::vector<std::string> numbered(std::int64_t nc) {
  std::vector<std::string> names;
  for (std::int64_t c = 0; c < nc; ++c) names.push_back(std::to_string(c));
  return names;
}

// The model a run trained: its `model` argument, unless that named weights to start from.
// The compat= a yolo_train checkpoint's run was built with; "8.3" when it predates the argument.
std::string compat_of_config(const std::string& config_yaml) {
  try {
    const YAML::Node node = YAML::Load(config_yaml);
    if (node.IsMap() && node["compat"]) return node["compat"].as<std::string>();
  } catch (const YAML::Exception&) {
  }
  return "8.3";
}

std::string model_of_config(const std::string& config_yaml) {
  try {
    const YAML::Node node = YAML::Load(config_yaml);
    if (node.IsMap() && node["model"]) {
      const std::string model = node["model"].as<std::string>();
      if (!is_weights_file(model)) return model;
    }
  } catch (const YAML::Exception&) {
  }
  return "";
}

// Seconds since the epoch as ISO 8601 in UTC, as Python's isoformat() writes it (microseconds
// only when there are any).
std::string iso_date(double seconds) {
  if (!(seconds > 0)) return "";
  const auto whole = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const auto micros = static_cast<long>((seconds - static_cast<double>(whole)) * 1e6);
  if (micros <= 0) return buf;
  char frac[32];
  std::snprintf(frac, sizeof frac, ".%06ld", std::min(micros, 999999L));
  return std::string(buf) + frac;
}

// The file's modification time (whole seconds), for weights that record no date.
std::string file_date(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return iso_date(static_cast<double>(st.st_mtime));
}

ModelWeights from_checkpoint(const fs::path& path) {
  const lc::Checkpoint c = lc::CheckpointStore::load(path);
  ModelWeights w;
  for (const auto& [name, t] : c.tensors) {
    if (name.rfind("ema.", 0) == 0) w.tensors.emplace_back(name.substr(4), t);
  }
  if (w.tensors.empty()) throw Error(path.string() + " holds no EMA weights: is it a yolo_train checkpoint?");
  w.model_yaml = model_of_config(c.meta.config);
  if (const auto it = c.meta.extra.find("names"); it != c.meta.extra.end()) w.names = decode_names(it->second);
  if (const auto it = c.meta.extra.find("kpt_shape"); it != c.meta.extra.end() && !it->second.empty()) {
    const auto comma = it->second.find(',');  // "n,dims", as the trainer records it
    w.kpt_shape = {std::stoll(it->second.substr(0, comma)), std::stoll(it->second.substr(comma + 1))};
  }
  w.builds_like = compat_of_config(c.meta.config);
  w.format = "ytckpt";
  w.description = "yolo_train checkpoint (EMA, step " + std::to_string(c.meta.step) + ")";
  w.date = iso_date(c.meta.wall_time);
  return w;
}

ModelWeights from_safetensors(const fs::path& path) {
  std::map<std::string, std::string> metadata;
  ModelWeights w;
  w.tensors = nn::read_safetensors(path, &metadata);
  if (const auto it = metadata.find("names"); it != metadata.end()) w.names = decode_names(it->second);
  if (const auto it = metadata.find("ultralytics"); it != metadata.end()) {
    w.builds_like = it->second;
  } else if (std::any_of(w.tensors.begin(), w.tensors.end(),
                         [](const auto& t) { return t.first.find(".one2one_cv2.") != std::string::npos; })) {
    w.builds_like = "8.4";  // without the key (nn::save_weights): an end-to-end head exists only since 8.4
  }
  w.format = "safetensors";
  w.description = "safetensors weights";
  if (const auto it = metadata.find("date"); it != metadata.end()) w.date = it->second;
  return w;
}

ModelWeights from_ultralytics(const fs::path& path) {
  UltralyticsCheckpoint pt = read_ultralytics_pt(path);
  ModelWeights w;
  w.tensors = std::move(pt.state_dict);
  w.model_yaml = model_yaml_from_weights(w.tensors, pt.scale, path.string());
  w.names = std::move(pt.names);
  w.kpt_shape = std::move(pt.kpt_shape);
  if (!pt.builds_like.empty()) w.builds_like = pt.builds_like;
  w.format = "pt";
  w.date = pt.date;
  w.description = "Ultralytics " + (pt.version.empty() ? std::string() : pt.version + " ") + "checkpoint (" +
                  pt.source + ")";
  return w;
}

}  // namespace

nn::DetectionModel build_model(const ModelWeights& weights, const std::string& source) {
  nn::DetectionModel net(nn::DetectionModelOptions(weights.model_yaml)
                             .nc(weights.nc)
                             .names(weights.names)
                             .ultralytics(weights.builds_like)
                             .kpt_shape(weights.kpt_shape));
  nn::load_state_dict(*net, weights.tensors, true, source);
  return net;
}

bool is_weights_file(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".ytckpt" || ext == ".safetensors" || ext == ".pt";
}

namespace {

bool has_tensor(const lc::NamedTensors& tensors, const std::string& name) {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& t) { return t.first == name; });
}

// A Classify head: `<head>.linear.weight` and no detection head's class branch.
bool is_classifier(const lc::NamedTensors& tensors) {
  const auto has = [&](const char* suffix) {
    return std::any_of(tensors.begin(), tensors.end(),
                       [&](const auto& t) { return detail::has_suffix(t.first, suffix); });
  };
  return has(".linear.weight") && !has(".cv3.0.2.weight");
}

// An OBB head: cv4 is its angle branch, whose last conv gives one channel (ne = 1); a Pose head's
// cv4 gives n * dims >= 2 keypoint channels.
bool is_obb(const lc::NamedTensors& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const auto& t) {
    return detail::has_suffix(t.first, ".cv4.0.2.weight") && t.second.dim() == 4 && t.second.size(0) == 1;
  });
}

}  // namespace

std::string family_from_weights(const lc::NamedTensors& tensors) {
  for (const auto& [name, t] : tensors) {  // YOLO26's end-to-end head has the one-to-one branch
    if (name.find(".one2one_cv2.") != std::string::npos) return "yolo26";
  }
  // A classification backbone: YOLO11-cls (and YOLO26-cls, the same network) ends in C2PSA.
  if (is_classifier(tensors)) {
    const bool psa = std::any_of(tensors.begin(), tensors.end(),
                                 [](const auto& t) { return t.first.find(".attn.qkv.") != std::string::npos; });
    return psa ? "yolo11" : "yolov8";
  }
  // YOLO11's Detect has the depthwise class branch: cv3.<level>.0 is a Sequential of two Convs.
  for (const auto& [name, t] : tensors) {
    if (name.find(".cv3.0.0.0.conv.weight") != std::string::npos) return "yolo11";
  }
  return "yolov8";
}

std::string scale_from_weights(const lc::NamedTensors& tensors, const std::string& source) {
  const std::string family = family_from_weights(tensors);
  for (const auto& [name, t] : tensors) {
    if (name != "model.0.conv.weight") continue;
    const int64_t c = t.size(0);
    if (family == "yolo11" || family == "yolo26") {
      switch (c) {
        case 16: return "n";
        case 32: return "s";
        case 64: return has_tensor(tensors, "model.2.m.1.cv1.conv.weight") ? "l" : "m";  // l repeats C3k2 twice
        case 96: return "x";
      }
      throw Error(source + ": model.0.conv.weight has " + std::to_string(c) +
                  " channels, which is no " + (family == "yolo11" ? "YOLO11" : "YOLO26") +
                  " scale (16 n, 32 s, 64 m/l, 96 x)");
    }
    switch (c) {
      case 16: return "n";
      case 32: return "s";
      case 48: return "m";
      case 64: return "l";
      case 80: return "x";
    }
    throw Error(source + ": model.0.conv.weight has " + std::to_string(c) +
                " channels, which is no YOLOv8 scale (16 n, 32 s, 48 m, 64 l, 80 x)");
  }
  throw Error(source + ": no model.0.conv.weight; not YOLOv8 or YOLO11 weights");
}

std::string model_yaml_from_weights(const lc::NamedTensors& tensors, const std::string& scale,
                                    const std::string& source) {
  // A Segment head has the Proto: yolo11n-seg.yaml; a Pose head a cv4 without one (Pose26: cv4_kpts);
  // an OBB head a cv4 of one angle channel.
  const auto has = [&](const char* part) {
    return std::any_of(tensors.begin(), tensors.end(),
                       [&](const auto& t) { return t.first.find(part) != std::string::npos; });
  };
  const bool segment = has(".proto.cv1."), obb = !segment && is_obb(tensors);
  const bool pose = !segment && !obb && (has(".cv4.0.") || has(".cv4_kpts."));
  return family_from_weights(tensors) + (scale.empty() ? scale_from_weights(tensors, source) : scale) +
         (is_classifier(tensors) ? "-cls" : segment ? "-seg" : pose ? "-pose" : obb ? "-obb" : "") + ".yaml";
}

std::int64_t nc_from_weights(const lc::NamedTensors& tensors, const std::string& source) {
  const bool classifier = is_classifier(tensors);
  for (const auto& [name, t] : tensors) {
    if (detail::has_suffix(name, classifier ? ".linear.weight" : ".cv3.0.2.weight")) return t.size(0);
  }
  throw Error(source + " holds no head (no *.cv3.0.2.weight of a detection head, no *.linear.weight of a Classify "
              "head): is it YOLOv8, YOLO11 or YOLO26 weights?");
}

std::string encode_names(const std::vector<std::string>& names) { return nlohmann::json(names).dump(); }

std::vector<std::string> decode_names(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return {};
  std::vector<std::string> names;
  for (const auto& n : j) {
    if (!n.is_string()) return {};
    names.push_back(n.get<std::string>());
  }
  return names;
}

ModelWeights read_model_weights(const fs::path& path) {
  if (!fs::is_regular_file(path)) {
    throw Error(path.string() + ": no such file; give a .pt (Ultralytics), .ytckpt (yolo_train) or .safetensors file");
  }
  const std::string ext = path.extension().string();
  ModelWeights w;
  if (ext == ".ytckpt") w = from_checkpoint(path);
  else if (ext == ".safetensors") w = from_safetensors(path);
  else if (ext == ".pt") w = from_ultralytics(path);
  else throw Error(path.string() + ": weights end in .pt, .ytckpt or .safetensors, not '" + ext + "'");
  if (w.tensors.empty()) throw Error(path.string() + " holds no weights");
  w.nc = nc_from_weights(w.tensors, path.string());
  if (w.model_yaml.empty()) w.model_yaml = model_yaml_from_weights(w.tensors, "", path.string());
  if (static_cast<std::int64_t>(w.names.size()) != w.nc) w.names = numbered(w.nc);
  if (w.date.empty()) w.date = file_date(path);
  return w;
}

}  // namespace yolotrain::io
