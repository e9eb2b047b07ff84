#pragma once

#include <cstdint>
#include <filesystem>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/data/data_config.hpp"

namespace yolotrain::data {

/// One labelled box: class id and normalized centre/size (YOLO label format).
struct Box {
  int cls = 0;
  float x = 0, y = 0, w = 0, h = 0;
  bool operator==(const Box& o) const { return cls == o.cls && x == o.x && y == o.y && w == o.w && h == o.h; }
};

/// One usable image of a split after validation.
struct ImageRecord {
  std::filesystem::path image;
  int height = 0;       ///< after EXIF orientation
  int width = 0;        ///< after EXIF orientation
  int orientation = 1;  ///< EXIF orientation tag
  std::vector<Box> boxes;  ///< empty: a background image
  /// Polygon labels (`class x1 y1 x2 y2 ...`, Ultralytics' segmentation format): the outline of
  /// each box, boxes[i] being its bounding box (Ultralytics' segments2boxes), as normalized
  /// x, y pairs; empty when the label file holds boxes.
  std::vector<std::vector<float>> segments;
  /// Pose labels (`class cx cy w h` + kpt_shape[0] x (x y [visible]), Ultralytics' pose format):
  /// each box's keypoints as normalized x, y, visibility triplets (kpt_shape[0] * 3 floats; a
  /// 2-dim label's visibility is 0 where x or y is negative, else 1, as Ultralytics sets it); empty
  /// when the split is not read as pose (ScanOptions::kpt_shape).
  std::vector<std::vector<float>> keypoints;
  /// A classification dataset's (data/class_folders.hpp): the image's class, its folder's index
  /// among the class names; -1 in box, polygon and pose datasets.
  int category = -1;
  std::int64_t sample = -1;  ///< in a memory_dataset(): the SampleSource index; -1: the file `image`
};

/// A file that was skipped, and why.
struct Problem {
  std::filesystem::path file;
  std::string reason;  ///< includes the line number for label files
};

/// What a scan found in one split.
struct ScanReport {
  std::size_t images = 0;       ///< usable images, backgrounds included
  std::size_t backgrounds = 0;  ///< usable images without boxes (no or empty label file)
  std::size_t boxes = 0;
  std::size_t duplicates = 0;   ///< duplicate label rows removed
  std::vector<Problem> corrupt;    ///< skipped images (bad image or bad label file)
  std::vector<std::string> warnings;  ///< non-fatal: clipped coordinates, duplicates removed
  std::vector<std::size_t> boxes_per_class;  ///< size nc
  /// A classification dataset's images per class (size nc); empty for the others.
  std::vector<std::size_t> images_per_class;
  bool from_cache = false;
  /// "N images, M backgrounds, K corrupt, D duplicates removed".
  std::string summary() const;
};

/// Options of a scan.
struct ScanOptions {
  /// Where the labels cache lives; default: default_labels_cache_path() (`labels/train.yolotrain.cache`).
  /// A read-only location only costs a warning.
  std::optional<std::filesystem::path> cache_path;
  bool use_cache = true;  ///< false: neither read nor write a cache
  int threads = 0;        ///< scan threads; 0 = hardware concurrency (at most 8)
  /// Coordinates beyond [0, 1] by at most this much (in corner space) are clipped with a warning;
  /// farther out, the label file is bad.
  float clip_tolerance = 0.01f;
  /// Read the labels as pose labels with this many keypoints of 2 (x y) or 3 (x y visible) numbers
  /// each (the data YAML's `kpt_shape`; load_split() takes it from there); unset: boxes or polygons.
  std::optional<std::array<int, 2>> kpt_shape;
};

/// One label file as scan_images() reads it (read_label_file()).
struct LabelFile {
  std::vector<Box> boxes;             ///< unique boxes, clipped to [0, 1]
  std::vector<std::vector<float>> segments;  ///< each box's polygon (polygon labels), else empty
  std::vector<std::vector<float>> keypoints;  ///< each box's keypoints (pose labels), else empty
  std::string problem;                ///< why the file is refused ("line 3: ..."); empty when usable
  std::vector<std::string> warnings;  ///< clipped boxes, duplicates removed
  std::size_t duplicates = 0;
};

/// Reads and validates a YOLO label file (`cls xc yc w h` per line, normalised) for `nc` classes:
/// what scan_images() does for each image's labels. A missing file is a background (no boxes).
/// A file with a line of more than 6 columns holds polygons (`cls x1 y1 x2 y2 ...`, at least 3
/// points), as Ultralytics decides: every line must then be one, and each box is its polygon's
/// bounding box. With `kpt_shape` every line is a pose label of exactly 5 + n * dims columns, its
/// keypoints' x, y within [-0.01, 1.01] and every number at least -0.01 (Ultralytics'
/// verify_image_label).
LabelFile read_label_file(const std::filesystem::path& label, int nc, float clip_tolerance = 0.01f,
                          std::optional<std::array<int, 2>> kpt_shape = std::nullopt);

class SampleSource;

/// A validated split: the usable images with their labels, and the scan report.
struct Dataset {
  std::string split;
  std::vector<std::string> names;
  std::vector<ImageRecord> records;  ///< sorted by image path
  ScanReport report;
  /// Where the pixels come from when they are not files (memory_dataset()); else null.
  std::shared_ptr<const SampleSource> source;
  /// The pose labels' shape when the split was read as pose (ScanOptions::kpt_shape): every record
  /// then has keypoints for each box.
  std::optional<std::array<int, 2>> kpt_shape;
  int nc() const { return static_cast<int>(names.size()); }
  std::size_t size() const { return records.size(); }
  /// Labelled boxes in all records.
  std::size_t boxes() const;
  /// Labelled boxes of each class in all records, [nc()] (Ultralytics' get_class_counts).
  std::vector<std::int64_t> boxes_per_class() const;
  /// Polygon outlines in all records: boxes() for a segmentation set, 0 for a detection set.
  std::size_t outlines() const;
};

/// Scans and validates `images` (see list_images) against `nc` classes, reading or writing the
/// labels cache. Corrupt images and bad label files are skipped with one Problem each; never throws
/// for a bad file. Throws yolotrain::Error only for unusable input (no files at all).
Dataset scan_images(const std::vector<std::filesystem::path>& images, const std::vector<std::string>& names,
                    const ScanOptions& options = {});

/// Loads split `split` of `config`: lists, scans and validates it. Throws yolotrain::Error naming
/// the split's folders when it has no usable image, or when the split is not in the YAML. A
/// classification dataset's split (DataConfig::classify) is load_class_split()'s.
Dataset load_split(const DataConfig& config, const std::string& split, const ScanOptions& options = {});

/// A cache key over the files' paths, sizes and modification times (and the scan settings).
std::string scan_cache_key(const std::vector<std::filesystem::path>& images, int nc, float clip_tolerance,
                           std::optional<std::array<int, 2>> kpt_shape = std::nullopt);

/// Where a split's labels cache lives by default: beside its labels folder, named for yolotrain
/// (`labels/train.yolotrain.cache`), apart from Ultralytics' `labels/train.cache`, which neither
/// tool can read of the other's.
std::filesystem::path default_labels_cache_path(const std::vector<std::filesystem::path>& images);

}  // namespace yolotrain::data
