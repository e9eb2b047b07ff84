// data.yaml parsing, split listing and the image -> label path rule.
#include "yolotrain/data/data_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "yolotrain/error.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data {
namespace {

const std::set<std::string>& image_extensions() {
  static const std::set<std::string> ext{".bmp", ".dng", ".jpeg", ".jpg", ".mpo", ".png",
                                         ".tif", ".tiff", ".webp", ".pfm"};
  return ext;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// lexically_normal() without a trailing separator ("a/b/.." -> "a", not "a/").
fs::path normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (!n.has_filename() && n.has_parent_path() && n != n.root_path()) n = n.parent_path();
  return n;
}

[[noreturn]] void fail(const fs::path& yaml, const std::string& what) {
  throw Error(yaml.string() + ": " + what);
}

fs::path resolve_root(const fs::path& yaml, const YAML::Node& doc) {
  const fs::path here = fs::absolute(yaml).parent_path();
  if (!doc["path"] || doc["path"].IsNull()) return here;
  const fs::path p = doc["path"].as<std::string>();
  if (p.is_absolute()) return normal(p);
  // Unlike Ultralytics: the YAML's own folder first, then the current folder.
  const fs::path beside = normal(here / p);
  if (fs::exists(beside)) return beside;
  const fs::path cwd = normal(fs::absolute(p));
  if (fs::exists(cwd)) return cwd;
  fail(yaml, "'path: " + p.string() + "' is neither " + beside.string() + " nor " + cwd.string() +
                 "; fix 'path' (relative paths are resolved against the YAML's folder)");
}

std::vector<fs::path> split_entries(const fs::path& yaml, const fs::path& root, const YAML::Node& node,
                                    const std::string& key) {
  std::vector<fs::path> out;
  auto add = [&](const YAML::Node& n) {
    if (!n.IsScalar()) fail(yaml, "'" + key + "' must be a path or a list of paths");
    const fs::path p = n.as<std::string>();
    out.push_back(normal(p.is_absolute() ? p : root / p));
  };
  if (node.IsSequence()) {
    for (const auto& n : node) add(n);
  } else {
    add(node);
  }
  if (out.empty()) fail(yaml, "'" + key + "' is empty");
  return out;
}

// Ultralytics' message (data/dataset.py, verify_args) for a kpt_shape that is not [n > 0, 2 | 3].
constexpr const char* kKptShapeHelp =
    "'kpt_shape' must be a list [number of keypoints, number of dims (2 for x,y or 3 for x,y,visible)], "
    "i.e. 'kpt_shape: [17, 3]'";

std::array<int, 2> parse_kpt_shape(const fs::path& yaml, const YAML::Node& node) {
  if (!node.IsSequence() || node.size() != 2) fail(yaml, kKptShapeHelp);
  const std::array<int, 2> shape{node[0].as<int>(), node[1].as<int>()};
  if (shape[0] <= 0 || (shape[1] != 2 && shape[1] != 3)) fail(yaml, kKptShapeHelp);
  return shape;
}

// flip_idx: one index per keypoint, each keypoint once (a flip swaps pairs, it loses none).
std::vector<int> parse_flip_idx(const fs::path& yaml, const YAML::Node& node, int keypoints) {
  if (!node.IsSequence()) fail(yaml, "'flip_idx' must be a list of keypoint indices");
  std::vector<int> idx;
  for (const auto& n : node) idx.push_back(n.as<int>());
  if (static_cast<int>(idx.size()) != keypoints) {
    fail(yaml, "flip_idx has " + std::to_string(idx.size()) + " entries; its length must be equal to kpt_shape[0]=" +
                   std::to_string(keypoints));
  }
  std::vector<int> sorted = idx;
  std::sort(sorted.begin(), sorted.end());
  for (int k = 0; k < keypoints; ++k) {
    if (sorted[static_cast<std::size_t>(k)] != k) {
      fail(yaml, "flip_idx must name every keypoint 0.." + std::to_string(keypoints - 1) + " once");
    }
  }
  return idx;
}

std::vector<std::string> parse_names(const fs::path& yaml, const YAML::Node& node) {
  std::vector<std::string> names;
  if (node.IsSequence()) {
    for (const auto& n : node) names.push_back(n.as<std::string>());
  } else if (node.IsMap()) {
    std::map<int, std::string> byid;
    for (const auto& kv : node) {
      int id = -1;
      try {
        id = kv.first.as<int>();
      } catch (const YAML::Exception&) {
        fail(yaml, "'names' keys must be class ids 0..nc-1, got '" + kv.first.as<std::string>() + "'");
      }
      byid[id] = kv.second.as<std::string>();
    }
    int expect = 0;
    for (const auto& [id, name] : byid) {
      if (id != expect) fail(yaml, "'names' must map every id 0..nc-1; id " + std::to_string(expect) + " is missing");
      names.push_back(name);
      ++expect;
    }
  } else {
    fail(yaml, "'names' must be a list or a map {id: name}");
  }
  if (names.empty()) fail(yaml, "'names' is empty");
  return names;
}

void list_folder(const fs::path& dir, std::vector<fs::path>& out) {
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink)) {
    if (e.is_regular_file() && image_extensions().count(lower(e.path().extension().string())))
      out.push_back(e.path());
  }
}

void list_txt(const fs::path& txt, std::vector<fs::path>& out) {
  std::ifstream in(txt);
  if (!in) throw Error(txt.string() + ": cannot read the image list");
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    fs::path p = line;
    if (p.is_relative()) p = txt.parent_path() / p;
    if (image_extensions().count(lower(p.extension().string()))) out.push_back(p.lexically_normal());
  }
}

}  // namespace

DataConfig load_data_yaml(const fs::path& yaml) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(yaml.string());
  } catch (const YAML::BadFile&) {
    throw Error(yaml.string() + ": cannot read the data YAML (does it exist?)");
  } catch (const YAML::Exception& e) {
    throw Error(yaml.string() + ": invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!doc.IsMap()) fail(yaml, "expected a mapping with path, train, val and names");
  DataConfig cfg;
  cfg.yaml = fs::absolute(yaml);
  try {
    cfg.root = resolve_root(yaml, doc);
    for (const char* key : {"train", "val", "test"}) {
      if (doc[key] && !doc[key].IsNull()) cfg.splits[key] = split_entries(yaml, cfg.root, doc[key], key);
    }
    if (!cfg.has("train") || !cfg.has("val")) fail(yaml, "'train' and 'val' are required");
    if (!doc["names"]) fail(yaml, "'names' is required (a list or a map {id: name})");
    cfg.names = parse_names(yaml, doc["names"]);
    if (doc["nc"] && !doc["nc"].IsNull() && doc["nc"].as<int>() != cfg.nc())
      fail(yaml, "'nc: " + doc["nc"].as<std::string>() + "' does not match the " + std::to_string(cfg.nc()) +
                     " names; fix one of them");
    if (doc["kpt_shape"] && !doc["kpt_shape"].IsNull()) cfg.kpt_shape = parse_kpt_shape(yaml, doc["kpt_shape"]);
    if (doc["flip_idx"] && !doc["flip_idx"].IsNull()) {
      if (!cfg.kpt_shape) fail(yaml, "'flip_idx' without 'kpt_shape': a pose dataset names both");
      cfg.flip_idx = parse_flip_idx(yaml, doc["flip_idx"], (*cfg.kpt_shape)[0]);
    }
    if (doc["kpt_oks_sigmas"] && !doc["kpt_oks_sigmas"].IsNull()) {
      if (!cfg.kpt_shape) fail(yaml, "'kpt_oks_sigmas' without 'kpt_shape': a pose dataset names both");
      cfg.kpt_oks_sigmas = doc["kpt_oks_sigmas"].as<std::vector<double>>();
      bool positive = static_cast<int>(cfg.kpt_oks_sigmas.size()) == (*cfg.kpt_shape)[0];
      for (double s : cfg.kpt_oks_sigmas) positive = positive && s > 0;
      if (!positive)
        fail(yaml, "'kpt_oks_sigmas' must be " + std::to_string((*cfg.kpt_shape)[0]) + " positive values");
    }
  } catch (const YAML::Exception& e) {
    fail(yaml, "bad value at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return cfg;
}

std::vector<fs::path> list_images(const std::vector<fs::path>& entries) {
  std::vector<fs::path> out;
  for (const auto& e : entries) {
    if (fs::is_directory(e)) {
      list_folder(e, out);
    } else if (fs::is_regular_file(e) && lower(e.extension().string()) == ".txt") {
      list_txt(e, out);
    } else {
      throw Error(e.string() + ": no such folder or .txt image list (check 'path' and the split entries)");
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

fs::path label_path_for(const fs::path& image) {
  std::string s = image.string();
  const std::string sep = "/images/";
  const auto at = s.rfind(sep);
  if (at != std::string::npos) s.replace(at, sep.size(), "/labels/");
  fs::path p = s;
  p.replace_extension(".txt");
  return p;
}

}  // namespace yolotrain::data
