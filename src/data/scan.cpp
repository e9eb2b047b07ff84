// Scan and validate a split once (images decode, labels are sane), cache the result.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "box_check.hpp"
#include "labels_cache.hpp"
#include "scan_threads.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/class_folders.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data {

std::string detail::check_box(const double v[5], int nc, float tol, Box& box, bool& clipped) {
  if (!std::isfinite(v[0]) || v[0] != std::floor(v[0]) || v[0] < 0 || v[0] >= nc) {
    std::ostringstream cls;  // as written: "3", "2.5"
    cls << v[0];
    return "class " + cls.str() + " is not an integer in [0, " + std::to_string(nc) + ")";
  }
  for (int i = 1; i < 5; ++i)
    if (!std::isfinite(v[i])) return "a coordinate is not a finite number";
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

void detail::add_usable(Dataset& ds, ImageRecord record) {
  ScanReport& rep = ds.report;
  ++rep.images;
  rep.backgrounds += record.boxes.empty();
  rep.boxes += record.boxes.size();
  for (const auto& b : record.boxes) ++rep.boxes_per_class[b.cls];
  ds.records.push_back(std::move(record));
}

namespace {

using detail::FileResult;

/// Ultralytics' labels cache hash covers the files' paths and sizes; this key also covers their
/// modification times, the class count, the clip tolerance and the pose labels' shape.
constexpr int kKeyVersion = 3;

/// What a label file is checked against: the class count, the clip tolerance, and for pose labels
/// their kpt_shape.
struct LabelRules {
  int nc = 0;
  float tol = 0.01f;
  std::optional<std::array<int, 2>> kpt_shape;
};

bool parse_number(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && end != s.c_str();
}

/// Splits a label line into numbers; an error text names the first one that is not.
std::string parse_numbers(const std::string& line, std::vector<double>& v) {
  std::istringstream in(line);
  v.clear();
  for (std::string t; in >> t;) {
    double x = 0;
    if (!parse_number(t, x)) return "'" + t + "' is not a number";
    if (!std::isfinite(x)) return "'" + t + "' is not a finite number";
    v.push_back(x);
  }
  return "";
}

/// Validates a box line {class, xc, yc, w, h}; returns an error text, or "" with `box` filled.
std::string parse_box(const std::vector<double>& v, int nc, float tol, Box& box, bool& clipped) {
  if (v.size() != 5) return std::to_string(v.size()) + " columns, expected 5 (class x_center y_center width height)";
  return detail::check_box(v.data(), nc, tol, box, clipped);
}

/// Validates a polygon line {class, x1, y1, x2, y2, ...}: its box is the points' bounding box
/// (Ultralytics' segments2boxes), checked as a box line is.
std::string parse_polygon(const std::vector<double>& v, int nc, float tol, Box& box, std::vector<float>& polygon,
                          bool& clipped) {
  if (v.size() == 5) {
    return "5 columns, a box (class x_center y_center width height) or a 2-point polygon among polygons: a file "
           "of polygon labels needs every line as a polygon of at least 3 points (class x1 y1 x2 y2 x3 y3 ...)";
  }
  const std::size_t coords = v.size() - 1;
  if (coords % 2 != 0) {
    return std::to_string(coords) + " coordinates after the class, an odd number: a polygon is x y pairs";
  }
  if (coords < 6) return "a polygon needs at least 3 points, got " + std::to_string(coords / 2);
  double x1 = v[1], y1 = v[2], x2 = v[1], y2 = v[2];
  polygon.clear();
  for (std::size_t i = 1; i < v.size(); i += 2) {
    if (v[i] < -tol || v[i] > 1 + tol || v[i + 1] < -tol || v[i + 1] > 1 + tol) {
      return "point " + std::to_string(i / 2 + 1) + " out of [0, 1] (not normalized?)";
    }
    x1 = std::min(x1, v[i]), x2 = std::max(x2, v[i]), y1 = std::min(y1, v[i + 1]), y2 = std::max(y2, v[i + 1]);
    polygon.push_back(static_cast<float>(v[i]));
    polygon.push_back(static_cast<float>(v[i + 1]));
  }
  const double b[5] = {v[0], (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1};
  return detail::check_box(b, nc, tol, box, clipped);
}

/// Checks one row as the file's kind (pose, polygon or box) into `row`: an error text, or "".
struct Row {
  Box box;
  std::vector<float> polygon, keypoints;
  bool clipped = false;
};
std::string check_row(const std::vector<double>& v, const LabelRules& rules, bool polygons, Row& row) {
  if (rules.kpt_shape)
    return detail::check_pose_row(v, rules.nc, rules.tol, *rules.kpt_shape, row.box, row.keypoints, row.clipped);
  if (polygons) return parse_polygon(v, rules.nc, rules.tol, row.box, row.polygon, row.clipped);
  return parse_box(v, rules.nc, rules.tol, row.box, row.clipped);
}

/// Whether `row` repeats a row of `record`: the same box (and, for pose rows, the same keypoints).
bool is_duplicate(const ImageRecord& record, const Row& row) {
  for (std::size_t i = 0; i < record.boxes.size(); ++i) {
    if (record.boxes[i] == row.box && (i >= record.keypoints.size() || record.keypoints[i] == row.keypoints))
      return true;
  }
  return false;
}

/// Reads and validates a label file into `r`; false (with r.problem) on a bad file.
bool read_labels(const fs::path& label, const LabelRules& rules, FileResult& r) {
  std::ifstream in(label);
  if (!in) return true;  // no label file: a background image
  std::vector<std::pair<int, std::vector<double>>> lines;  // line number, numbers
  bool polygons = false;  // Ultralytics: any line longer than 6 columns makes the file polygons
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<double> v;
    if (const std::string err = parse_numbers(line, v); !err.empty()) {
      r.problem = {label, "line " + std::to_string(lineno) + ": " + err};
      return false;
    }
    polygons = polygons || (v.size() > 6 && !rules.kpt_shape);  // pose rows are never polygons
    lines.emplace_back(lineno, std::move(v));
  }
  int clipped_lines = 0;
  for (const auto& [lineno, v] : lines) {
    Row row;
    if (const std::string err = check_row(v, rules, polygons, row); !err.empty()) {
      r.problem = {label, "line " + std::to_string(lineno) + ": " + err};
      return false;
    }
    clipped_lines += row.clipped;
    if (is_duplicate(r.record, row)) {
      ++r.duplicates;
      continue;
    }
    r.record.boxes.push_back(row.box);
    if (polygons) r.record.segments.push_back(std::move(row.polygon));
    if (rules.kpt_shape) r.record.keypoints.push_back(std::move(row.keypoints));
  }
  if (clipped_lines)
    r.warnings.push_back(label.string() + ": " + std::to_string(clipped_lines) +
                         " box(es) slightly outside [0, 1] clipped");
  if (r.duplicates)
    r.warnings.push_back(label.string() + ": " + std::to_string(r.duplicates) + " duplicate label row(s) removed");
  return true;
}

FileResult validate(const fs::path& image, const LabelRules& rules) {
  FileResult r;
  r.record.image = image;
  try {
    const ImageInfo info = verify_image(image);
    r.record.height = info.height, r.record.width = info.width, r.record.orientation = info.orientation;
  } catch (const std::exception& e) {
    r.problem = {image, e.what()};
    return r;
  }
  r.ok = read_labels(label_path_for(image), rules, r);
  if (!r.ok) r.record.boxes.clear(), r.record.segments.clear(), r.record.keypoints.clear();
  return r;
}

std::vector<FileResult> validate_all(const std::vector<fs::path>& images, int nc, const ScanOptions& opt) {
  std::vector<FileResult> out(images.size());
  const LabelRules rules{nc, opt.clip_tolerance, opt.kpt_shape};
  detail::parallel_for(images.size(), opt.threads > 0 ? opt.threads : detail::default_threads(),
               [&](std::size_t i) { out[i] = validate(images[i], rules); });
  return out;
}

/// Where earlier yolotrain builds kept the cache: Ultralytics' own `labels/train.cache`, which made
/// Ultralytics fail on it (UnpicklingError) and had yolotrain replace Ultralytics' file.
fs::path shared_cache_path(const std::vector<fs::path>& images) {
  return fs::path(label_path_for(images.front()).parent_path().string() + ".cache");
}

/// Removes a cache of ours left at Ultralytics' place by an older yolotrain (recognised by its
/// magic; an Ultralytics cache there is left alone), with a warning saying so.
void remove_old_cache(const std::vector<fs::path>& images, ScanReport& report) {
  const fs::path old = shared_cache_path(images);
  if (!detail::is_labels_cache(old)) return;
  std::error_code ec;
  if (fs::remove(old, ec))
    report.warnings.push_back("removed " + old.string() + ", a labels cache of an older yolotrain at Ultralytics' "
                              "place (Ultralytics could not read it); yolotrain's is now " +
                              default_labels_cache_path(images).filename().string());
}

/// "path|size|mtime" of a file (one stat), "path|missing" when there is none.
std::string stamp(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return p.string() + "|missing\n";
  return p.string() + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "\n";
}

/// Ultralytics' YOLODataset.get_labels: a split whose label files mix polygons and boxes trains on
/// the boxes alone (its polygons dropped, with a warning); a segmentation run refuses it.
void drop_segments_of_mixed_labels(Dataset& ds) {
  const std::size_t boxes = ds.boxes(), segments = ds.outlines();
  if (segments == 0 || segments == boxes) return;
  ds.report.warnings.push_back("Box and segment counts should be equal, but got " + std::to_string(segments) +
                               " polygons and " + std::to_string(boxes) +
                               " boxes: only the boxes will be used and the polygons are dropped. Give either a "
                               "detection or a segmentation dataset, not one mixing box and polygon label files.");
  for (auto& r : ds.records) r.segments.clear();
}

}  // namespace

std::size_t Dataset::boxes() const {
  std::size_t n = 0;
  for (const auto& r : records) n += r.boxes.size();
  return n;
}

std::vector<std::int64_t> Dataset::boxes_per_class() const {
  std::vector<std::int64_t> n(static_cast<std::size_t>(nc()), 0);
  for (const auto& r : records) {
    for (const Box& b : r.boxes) {
      if (b.cls >= 0 && b.cls < nc()) ++n[static_cast<std::size_t>(b.cls)];
    }
  }
  return n;
}

std::size_t Dataset::outlines() const {
  std::size_t n = 0;
  for (const auto& r : records) n += r.segments.size();
  return n;
}

std::string ScanReport::summary() const {
  if (!images_per_class.empty()) {  // a classification split: no labels, no backgrounds
    return std::to_string(images) + " images, " + std::to_string(corrupt.size()) + " corrupt";
  }
  return std::to_string(images) + " images, " + std::to_string(backgrounds) + " backgrounds, " +
         std::to_string(corrupt.size()) + " corrupt, " + std::to_string(duplicates) + " duplicates removed";
}

fs::path default_labels_cache_path(const std::vector<fs::path>& images) {
  if (images.empty()) throw Error("no images: a labels cache is named after a split's labels folder");
  return fs::path(label_path_for(images.front()).parent_path().string() + ".yolotrain.cache");
}

std::string scan_cache_key(const std::vector<fs::path>& images, int nc, float clip_tolerance,
                           std::optional<std::array<int, 2>> kpt_shape) {
  std::vector<std::string> stamps(images.size());
  detail::parallel_for(images.size(), detail::default_threads(),
               [&](std::size_t i) { stamps[i] = stamp(images[i]) + stamp(label_path_for(images[i])); });
  lifecycle::Sha256 hash;
  const std::string pose = kpt_shape ? std::to_string((*kpt_shape)[0]) + "x" + std::to_string((*kpt_shape)[1]) : "-";
  hash.update("v" + std::to_string(kKeyVersion) + " nc " + std::to_string(nc) + " tol " +
              std::to_string(clip_tolerance) + " kpt " + pose + "\n");
  for (const auto& s : stamps) hash.update(s);
  return hash.hex_digest();
}

Dataset scan_images(const std::vector<fs::path>& images, const std::vector<std::string>& names,
                    const ScanOptions& options) {
  if (images.empty()) throw Error("no images to scan");
  const int nc = static_cast<int>(names.size());
  Dataset ds;
  ds.names = names;
  ds.kpt_shape = options.kpt_shape;
  ScanReport& rep = ds.report;
  const fs::path cache = options.cache_path.value_or(default_labels_cache_path(images));
  if (options.use_cache && !options.cache_path) remove_old_cache(images, rep);
  const std::string key =
      options.use_cache ? scan_cache_key(images, nc, options.clip_tolerance, options.kpt_shape) : "";
  std::optional<std::vector<FileResult>> results;
  if (options.use_cache) results = detail::read_labels_cache(cache, key);
  rep.from_cache = results.has_value();
  if (!results) {
    results = validate_all(images, nc, options);
    if (options.use_cache) {
      const std::string failure = detail::write_labels_cache(cache, key, *results);
      if (!failure.empty()) rep.warnings.push_back("labels cache not saved (" + failure + ")");
    }
  }
  rep.boxes_per_class.assign(nc, 0);
  for (auto& r : *results) {
    rep.warnings.insert(rep.warnings.end(), r.warnings.begin(), r.warnings.end());
    if (!r.ok) {
      rep.corrupt.push_back(r.problem);
      continue;
    }
    rep.duplicates += r.duplicates;
    detail::add_usable(ds, std::move(r.record));
  }
  drop_segments_of_mixed_labels(ds);
  return ds;
}

Dataset load_split(const DataConfig& config, const std::string& split, const ScanOptions& options) {
  if (config.classify) return load_class_split(config, split, options);
  const auto it = config.splits.find(split);
  if (it == config.splits.end()) throw Error(config.yaml.string() + ": no '" + split + "' split");
  std::string where;
  for (const auto& e : it->second) where += (where.empty() ? "" : ", ") + e.string();
  const auto images = list_images(it->second);
  if (images.empty())
    throw Error(config.yaml.string() + ": split '" + split + "' has no images in " + where +
                " (supported extensions: jpg jpeg png ...)");
  ScanOptions read = options;
  if (!read.kpt_shape) read.kpt_shape = config.kpt_shape;  // a pose dataset's labels are pose rows
  Dataset ds = scan_images(images, config.names, read);
  ds.split = split;
  if (ds.records.empty()) {
    std::string reasons;  // the first few by name; yolo_dataset check lists them all
    for (std::size_t i = 0; i < std::min<std::size_t>(ds.report.corrupt.size(), 5); ++i) {
      reasons += "\n  " + ds.report.corrupt[i].file.string() + ": " + ds.report.corrupt[i].reason;
    }
    if (ds.report.corrupt.size() > 5)
      reasons += "\n  ... and " + std::to_string(ds.report.corrupt.size() - 5) + " more";
    throw Error(config.yaml.string() + ": split '" + split + "' has no usable image in " + where + " (" +
                std::to_string(ds.report.corrupt.size()) + " corrupt; 'yolo_dataset check' lists them all):" + reasons);
  }
  return ds;
}

LabelFile read_label_file(const fs::path& label, int nc, float clip_tolerance,
                          std::optional<std::array<int, 2>> kpt_shape) {
  FileResult r;
  LabelFile out;
  if (!read_labels(label, LabelRules{nc, clip_tolerance, kpt_shape}, r)) out.problem = r.problem.reason;
  out.boxes = std::move(r.record.boxes);
  out.segments = std::move(r.record.segments);
  out.keypoints = std::move(r.record.keypoints);
  out.warnings = std::move(r.warnings);
  out.duplicates = r.duplicates;
  return out;
}

}  // namespace yolotrain::data
