// Scan and validate a split once (images decode, labels are sane), cache the result.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/atomic_file.hpp"
#include "yolotrain/lifecycle/sha256.hpp"
#include "yolotrain/lifecycle/signal_binding.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace yolotrain::data {
namespace {

constexpr int kCacheVersion = 1;

/// The outcome of validating one image and its label file.
struct FileResult {
  bool ok = false;
  ImageRecord record;
  Problem problem;
  std::vector<std::string> warnings;
  std::size_t duplicates = 0;
};

bool parse_number(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && end != s.c_str();
}

/// Validates one label line; returns an error text, or "" with `box` filled.
std::string parse_line(const std::string& line, int nc, float tol, Box& box, bool& clipped) {
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string t; in >> t;) f.push_back(t);
  if (f.size() != 5)
    return std::to_string(f.size()) + " columns, expected 5 (class x_center y_center width height)";
  double v[5];
  for (int i = 0; i < 5; ++i) {
    if (!parse_number(f[i], v[i])) return "'" + f[i] + "' is not a number";
    if (!std::isfinite(v[i])) return "'" + f[i] + "' is not a finite number";
  }
  if (v[0] != std::floor(v[0]) || v[0] < 0 || v[0] >= nc)
    return "class " + f[0] + " is not an integer in [0, " + std::to_string(nc) + ")";
  double x1 = v[1] - v[3] / 2, y1 = v[2] - v[4] / 2, x2 = v[1] + v[3] / 2, y2 = v[2] + v[4] / 2;
  for (double c : {v[1], v[2], v[3], v[4], x1, y1, x2, y2})
    if (c < -tol || c > 1 + tol) return "coordinates out of [0, 1] (not normalized?)";
  if (v[3] <= 0 || v[4] <= 0) return "degenerate box (width or height <= 0)";
  // Overshoots up to 1e-6 are rounding of 6-decimal labels (x + w/2 = 1.0000000000000002): silent.
  constexpr double kRounding = 1e-6;
  clipped = x1 < -kRounding || y1 < -kRounding || x2 > 1 + kRounding || y2 > 1 + kRounding;
  x1 = std::clamp(x1, 0.0, 1.0), y1 = std::clamp(y1, 0.0, 1.0);
  x2 = std::clamp(x2, 0.0, 1.0), y2 = std::clamp(y2, 0.0, 1.0);
  if (x2 - x1 <= 0 || y2 - y1 <= 0) return "degenerate box after clipping to the image";
  box.cls = static_cast<int>(v[0]);
  box.x = static_cast<float>((x1 + x2) / 2), box.y = static_cast<float>((y1 + y2) / 2);
  box.w = static_cast<float>(x2 - x1), box.h = static_cast<float>(y2 - y1);
  return "";
}

/// Reads and validates a label file into `r`; false (with r.problem) on a bad file.
bool read_labels(const fs::path& label, int nc, float tol, FileResult& r) {
  std::ifstream in(label);
  if (!in) return true;  // no label file: a background image
  std::string line;
  int lineno = 0, clipped_lines = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Box b;
    bool clipped = false;
    const std::string err = parse_line(line, nc, tol, b, clipped);
    if (!err.empty()) {
      r.problem = {label, "line " + std::to_string(lineno) + ": " + err};
      return false;
    }
    clipped_lines += clipped;
    if (std::find(r.record.boxes.begin(), r.record.boxes.end(), b) != r.record.boxes.end()) {
      ++r.duplicates;
      continue;
    }
    r.record.boxes.push_back(b);
  }
  if (clipped_lines)
    r.warnings.push_back(label.string() + ": " + std::to_string(clipped_lines) +
                         " box(es) slightly outside [0, 1] clipped");
  if (r.duplicates)
    r.warnings.push_back(label.string() + ": " + std::to_string(r.duplicates) + " duplicate label row(s) removed");
  return true;
}

FileResult validate(const fs::path& image, int nc, float tol) {
  FileResult r;
  r.record.image = image;
  try {
    const ImageInfo info = verify_image(image);
    r.record.height = info.height, r.record.width = info.width, r.record.orientation = info.orientation;
  } catch (const std::exception& e) {
    r.problem = {image, e.what()};
    return r;
  }
  r.ok = read_labels(label_path_for(image), nc, tol, r);
  if (!r.ok) r.record.boxes.clear();
  return r;
}

std::vector<FileResult> validate_all(const std::vector<fs::path>& images, int nc, const ScanOptions& opt) {
  std::vector<FileResult> out(images.size());
  int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  threads = std::max(1, std::min<int>(threads, static_cast<int>(images.size())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      lifecycle::block_lifecycle_signals_in_this_thread();
      for (std::size_t i = t; i < images.size(); i += threads) out[i] = validate(images[i], nc, opt.clip_tolerance);
    });
  for (auto& th : pool) th.join();
  return out;
}

json to_json(const FileResult& r) {
  json boxes = json::array();
  for (const auto& b : r.record.boxes) boxes.push_back({b.cls, b.x, b.y, b.w, b.h});
  return {{"im", r.record.image.string()}, {"ok", r.ok}, {"h", r.record.height}, {"w", r.record.width},
          {"o", r.record.orientation}, {"boxes", boxes}, {"pf", r.problem.file.string()},
          {"pr", r.problem.reason}, {"warn", r.warnings}, {"dups", r.duplicates}};
}

FileResult from_json(const json& j) {
  FileResult r;
  r.ok = j.at("ok");
  r.record.image = j.at("im").get<std::string>();
  r.record.height = j.at("h"), r.record.width = j.at("w"), r.record.orientation = j.at("o");
  for (const auto& b : j.at("boxes"))
    r.record.boxes.push_back({b[0].get<int>(), b[1].get<float>(), b[2].get<float>(), b[3].get<float>(),
                              b[4].get<float>()});
  r.problem = {j.at("pf").get<std::string>(), j.at("pr").get<std::string>()};
  r.warnings = j.at("warn").get<std::vector<std::string>>();
  r.duplicates = j.at("dups");
  return r;
}

fs::path default_cache_path(const std::vector<fs::path>& images) {
  const fs::path labels_dir = label_path_for(images.front()).parent_path();
  return fs::path(labels_dir.string() + ".cache");
}

std::optional<std::vector<FileResult>> read_cache(const fs::path& path, const std::string& key) {
  try {
    if (!fs::exists(path)) return std::nullopt;
    const json j = json::parse(lifecycle::read_file(path));
    if (j.at("version") != kCacheVersion || j.at("key") != key) return std::nullopt;
    std::vector<FileResult> out;
    for (const auto& e : j.at("entries")) out.push_back(from_json(e));
    return out;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable or stale: scan again
  }
}

void write_cache(const fs::path& path, const std::string& key, const std::vector<FileResult>& results,
                 ScanReport& report) {
  json entries = json::array();
  for (const auto& r : results) entries.push_back(to_json(r));
  const json j = {{"version", kCacheVersion}, {"key", key}, {"entries", entries}};
  try {
    lifecycle::atomic_write(path, j.dump());
  } catch (const std::exception& e) {
    report.warnings.push_back(std::string("labels cache not saved (") + e.what() + ")");
  }
}

std::string stamp(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return p.string() + "|missing\n";
  const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
  return p.string() + "|" + std::to_string(size) + "|" + std::to_string(mtime) + "\n";
}

}  // namespace

std::string ScanReport::summary() const {
  return std::to_string(images) + " images, " + std::to_string(backgrounds) + " backgrounds, " +
         std::to_string(corrupt.size()) + " corrupt, " + std::to_string(duplicates) + " duplicates removed";
}

std::string scan_cache_key(const std::vector<fs::path>& images, int nc, float clip_tolerance) {
  std::string s = "v" + std::to_string(kCacheVersion) + " nc " + std::to_string(nc) + " tol " +
                  std::to_string(clip_tolerance) + "\n";
  for (const auto& im : images) s += stamp(im) + stamp(label_path_for(im));
  return lifecycle::sha256_hex(s);
}

Dataset scan_images(const std::vector<fs::path>& images, const std::vector<std::string>& names,
                    const ScanOptions& options) {
  if (images.empty()) throw Error("no images to scan");
  const int nc = static_cast<int>(names.size());
  Dataset ds;
  ds.names = names;
  ScanReport& rep = ds.report;
  const fs::path cache = options.cache_path.value_or(default_cache_path(images));
  const std::string key = options.use_cache ? scan_cache_key(images, nc, options.clip_tolerance) : "";
  std::optional<std::vector<FileResult>> results;
  if (options.use_cache) results = read_cache(cache, key);
  rep.from_cache = results.has_value();
  if (!results) {
    results = validate_all(images, nc, options);
    if (options.use_cache) write_cache(cache, key, *results, rep);
  }
  rep.boxes_per_class.assign(nc, 0);
  for (auto& r : *results) {
    rep.warnings.insert(rep.warnings.end(), r.warnings.begin(), r.warnings.end());
    if (!r.ok) {
      rep.corrupt.push_back(r.problem);
      continue;
    }
    rep.duplicates += r.duplicates;
    ++rep.images;
    rep.backgrounds += r.record.boxes.empty();
    rep.boxes += r.record.boxes.size();
    for (const auto& b : r.record.boxes) ++rep.boxes_per_class[b.cls];
    ds.records.push_back(std::move(r.record));
  }
  return ds;
}

Dataset load_split(const DataConfig& config, const std::string& split, const ScanOptions& options) {
  const auto it = config.splits.find(split);
  if (it == config.splits.end()) throw Error(config.yaml.string() + ": no '" + split + "' split");
  std::string where;
  for (const auto& e : it->second) where += (where.empty() ? "" : ", ") + e.string();
  const auto images = list_images(it->second);
  if (images.empty())
    throw Error(config.yaml.string() + ": split '" + split + "' has no images in " + where +
                " (supported extensions: jpg jpeg png ...)");
  Dataset ds = scan_images(images, config.names, options);
  ds.split = split;
  if (ds.records.empty()) {
    std::string reasons;  // the first few by name; yolo_dataset check lists them all
    for (std::size_t i = 0; i < std::min<std::size_t>(ds.report.corrupt.size(), 5); ++i) {
      reasons += "\n  " + ds.report.corrupt[i].file.string() + ": " + ds.report.corrupt[i].reason;
    }
    if (ds.report.corrupt.size() > 5) reasons += "\n  ... and " + std::to_string(ds.report.corrupt.size() - 5) + " more";
    throw Error(config.yaml.string() + ": split '" + split + "' has no usable image in " + where + " (" +
                std::to_string(ds.report.corrupt.size()) + " corrupt; 'yolo_dataset check' lists them all):" + reasons);
  }
  return ds;
}

LabelFile read_label_file(const fs::path& label, int nc, float clip_tolerance) {
  FileResult r;
  LabelFile out;
  if (!read_labels(label, nc, clip_tolerance, r)) out.problem = r.problem.reason;
  out.boxes = std::move(r.record.boxes);
  out.warnings = std::move(r.warnings);
  out.duplicates = r.duplicates;
  return out;
}

}  // namespace yolotrain::data
