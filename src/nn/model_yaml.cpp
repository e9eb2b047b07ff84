#include "yolotrain/nn/model_yaml.hpp"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>
#include <sstream>

#include "model_def.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::nn {
namespace fs = std::filesystem;

namespace {

void add_if_dir(std::vector<fs::path>& out, const fs::path& dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return;
  for (const auto& p : out) {
    if (fs::equivalent(p, dir, ec)) return;
  }
  out.push_back(dir);
}

fs::path library_relative_models_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&model_search_paths), &info) == 0 || info.dli_fname == nullptr) return {};
  return (fs::path(info.dli_fname).parent_path() / YOLOTRAIN_MODELS_LIB_RELATIVE).lexically_normal();
}

}  // namespace

std::vector<fs::path> model_search_paths() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("YOLOTRAIN_MODELS"); env != nullptr) {
    std::stringstream ss(env);
    for (std::string item; std::getline(ss, item, ':');) add_if_dir(dirs, item);
  }
  add_if_dir(dirs, library_relative_models_dir());
  add_if_dir(dirs, YOLOTRAIN_MODELS_INSTALL_DIR);
  add_if_dir(dirs, YOLOTRAIN_MODELS_SOURCE_DIR);
  return dirs;
}

std::string guess_model_scale(const std::string& name) {
  static const std::regex pattern("yolov?\\d+([nslmx])");  // Ultralytics: yolo[v]?\d+([nslmx])
  std::smatch m;
  const std::string stem = fs::path(name).stem().string();
  return std::regex_search(stem, m, pattern) ? m[1].str() : std::string();
}

ModelSource resolve_model(const std::string& name_or_path) {
  std::error_code ec;
  const fs::path given(name_or_path);
  const std::string scale = guess_model_scale(name_or_path);
  if (fs::is_regular_file(given, ec)) return {given, scale};
  // yolov8n.yaml -> yolov8.yaml (Ultralytics: re.sub(r"(\d+)([nslmx])(.+)?$", r"\1\3", stem)).
  static const std::regex unify("(\\d+)([nslmx])(.+)?$");
  const std::string unified =
      std::regex_replace(given.stem().string(), unify, "$1$3") + given.extension().string();
  const auto dirs = model_search_paths();
  if (!given.has_parent_path()) {
    for (const auto& dir : dirs) {
      if (fs::is_regular_file(dir / given, ec)) return {dir / given, scale};
      if (fs::is_regular_file(dir / unified, ec)) return {dir / unified, scale};
    }
  }
  std::string searched;
  for (const auto& dir : dirs) searched += "\n  " + dir.string();
  if (searched.empty()) searched = " (none of the model folders exists)";
  throw Error("model '" + name_or_path + "': no such file, and neither '" + given.filename().string() +
              "' nor '" + unified + "' is in the model folders searched:" + searched +
              "\nGive a path to a model YAML, or add its folder to YOLOTRAIN_MODELS.");
}

int64_t make_divisible(double x, int64_t divisor) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

namespace detail {
namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw Error("model YAML " + path.string() + ": " + what);
}

std::string where(const char* section, size_t k, const YAML::Node& row) {
  return std::string(section) + "[" + std::to_string(k) + "] (layer row at line " +
         std::to_string(row.Mark().line + 1) + ")";
}

int64_t absolute_from(const ModelDef& def, const LayerDef& layer, const YAML::Node& f) {
  int64_t v = 0;
  try {
    v = f.as<int64_t>();
  } catch (const YAML::Exception&) {
    fail(def.path, layer.where + ": 'from' entry " + YAML::Dump(f) + " is not an integer");
  }
  const int64_t i = layer.index;
  if (v == -1) return i - 1;  // the previous layer; -1 again (the image) for layer 0
  const int64_t abs = v < 0 ? i + v : v;
  if (abs < 0 || abs >= i) {
    fail(def.path, layer.where + ": 'from' index " + std::to_string(v) + " does not name an earlier layer (layer " +
                       std::to_string(i) + " can use -1 or 0.." + std::to_string(i - 1) + ")");
  }
  return abs;
}

LayerDef parse_row(const ModelDef& def, const char* section, size_t k, const YAML::Node& row, int64_t index) {
  LayerDef layer;
  layer.index = index;
  layer.where = where(section, k, row);
  if (!row.IsSequence() || row.size() != 4) {
    fail(def.path, layer.where + ": a row must be [from, repeats, module, args], got " + YAML::Dump(row));
  }
  layer.from_list = row[0].IsSequence();
  if (layer.from_list) {
    for (const auto& f : row[0]) layer.from.push_back(absolute_from(def, layer, f));
    if (layer.from.empty()) fail(def.path, layer.where + ": 'from' is an empty list");
  } else {
    layer.from.push_back(absolute_from(def, layer, row[0]));
  }
  int64_t n = 1;
  try {
    n = row[1].as<int64_t>();
  } catch (const YAML::Exception&) {
    fail(def.path, layer.where + ": repeats " + YAML::Dump(row[1]) + " is not an integer");
  }
  if (n < 1 || n > 1000) fail(def.path, layer.where + ": repeats must be 1 to 1000, got " + std::to_string(n));
  // Python's round() rounds half to even, as nearbyint does in the default rounding mode.
  layer.repeats = n > 1 ? std::max<int64_t>(static_cast<int64_t>(std::nearbyint(n * def.depth)), 1) : n;
  layer.module = row[2].IsScalar() ? row[2].Scalar() : std::string();
  for (const char* prefix : {"torch.nn.", "nn."}) {
    if (layer.module.rfind(prefix, 0) == 0) layer.module = layer.module.substr(std::string(prefix).size());
  }
  layer.args = row[3];
  if (!layer.args.IsSequence()) fail(def.path, layer.where + ": args must be a list, got " + YAML::Dump(row[3]));
  return layer;
}

void read_scale(ModelDef& def, const YAML::Node& root, const std::string& scale) {
  const YAML::Node scales = root["scales"];
  if (!scales || scales.size() == 0) {
    def.depth = root["depth_multiple"] ? root["depth_multiple"].as<double>() : 1.0;
    def.width = root["width_multiple"] ? root["width_multiple"].as<double>() : 1.0;
    def.max_channels = std::numeric_limits<double>::infinity();
    def.scale = scale;
    return;
  }
  def.scale = scale.empty() ? scales.begin()->first.as<std::string>() : scale;
  const YAML::Node row = scales[def.scale];
  if (!row) {
    std::string known;
    for (const auto& kv : scales) known += " " + kv.first.as<std::string>();
    fail(def.path, "no scale '" + def.scale + "' in 'scales' (it has:" + known + ")");
  }
  if (!row.IsSequence() || row.size() != 3) {
    fail(def.path, "scales." + def.scale + " must be [depth, width, max_channels]");
  }
  def.depth = row[0].as<double>();
  def.width = row[1].as<double>();
  def.max_channels = row[2].as<double>();
}

}  // namespace

std::string row_context(const ModelDef& def, const LayerDef& layer) {
  return "model YAML " + def.path.string() + ": " + layer.where + " (" + layer.module + "): ";
}

ModelDef load_model_def(const fs::path& path, const std::string& scale, std::optional<int64_t> nc, int64_t ch,
                        bool ultralytics84, const std::vector<int64_t>& kpt_shape) {
  ModelDef def;
  def.path = path;
  def.ultralytics84 = ultralytics84;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    fail(path, std::string("cannot read it as YAML: ") + e.what());
  }
  if (!root.IsMap()) fail(path, "the top level must be a mapping with nc, backbone and head");
  try {
    if (nc) {
      def.nc = *nc;
    } else if (root["nc"]) {
      def.nc = root["nc"].as<int64_t>();
    } else {
      fail(path, "no 'nc' (number of classes); add one or set DetectionModelOptions::nc");
    }
    def.ch = root["ch"] ? root["ch"].as<int64_t>() : ch;
    if (root["reg_max"]) def.reg_max = root["reg_max"].as<int64_t>();
    if (root["end2end"] && !root["end2end"].IsNull()) def.end2end = root["end2end"].as<bool>();
    if (root["kpt_shape"] && !root["kpt_shape"].IsNull()) def.kpt_shape = root["kpt_shape"].as<std::vector<int64_t>>();
    if (!kpt_shape.empty()) def.kpt_shape = kpt_shape;  // PoseModel: the dataset's kpt_shape wins
    read_scale(def, root, scale);
  } catch (const YAML::Exception& e) {
    fail(path, std::string("bad value: ") + e.what());
  }
  // Bounds that keep a malformed YAML from asking for absurd tensors (or overflowing the scaling).
  if (def.nc <= 0 || def.nc > 100000) fail(path, "nc must be 1 to 100000, got " + std::to_string(def.nc));
  if (def.ch <= 0 || def.ch > 64) fail(path, "ch (input channels) must be 1 to 64, got " + std::to_string(def.ch));
  if (def.reg_max < 1 || def.reg_max > 64) fail(path, "reg_max must be 1 to 64, got " + std::to_string(def.reg_max));
  if (!(def.depth > 0 && def.depth <= 100) || !(def.width > 0 && def.width <= 100)) {
    fail(path, "the depth and width multiples must be in (0, 100]");
  }
  if (!(def.max_channels >= 1)) fail(path, "max_channels must be at least 1");
  if (def.end2end && !ultralytics84) {  // YOLO26's rows (C3k2's attn flag) exist only in 8.4's schema
    fail(path, "an end-to-end model (end2end: True, YOLO26) exists only since Ultralytics 8.4; build it as 8.4 "
               "(compat=8.4, the default), not 8.3");
  }
  int64_t index = 0;
  for (const char* section : {"backbone", "head"}) {
    const YAML::Node rows = root[section];
    if (!rows || !rows.IsSequence()) fail(path, std::string("no '") + section + "' list of layer rows");
    for (size_t k = 0; k < rows.size(); ++k) def.layers.push_back(parse_row(def, section, k, rows[k], index++));
  }
  return def;
}

}  // namespace detail
}  // namespace yolotrain::nn
