#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace yolotrain::data {

/// A parsed Ultralytics data.yaml.
struct DataConfig {
  std::filesystem::path yaml;  ///< the file it came from
  std::filesystem::path root;  ///< `path`, resolved (see load_data_yaml)
  /// Split name ("train", "val", "test") -> its entries (folders or .txt lists), resolved.
  std::map<std::string, std::vector<std::filesystem::path>> splits;
  std::vector<std::string> names;  ///< class names, index = class id
  /// A pose dataset's `kpt_shape: [keypoints, 2 | 3]` (x y, or x y visibility per keypoint).
  std::optional<std::array<int, 2>> kpt_shape;
  /// `flip_idx`: the keypoint each one becomes under a horizontal flip (empty: none given).
  std::vector<int> flip_idx;
  /// `kpt_oks_sigmas`: the OKS sigma of each keypoint for the pose loss and validation (empty: none
  /// given; COCO's for 17 keypoints, else 1 / n).
  std::vector<double> kpt_oks_sigmas;
  /// A classification dataset (data/class_folders.hpp: a folder per class, no label files): `yaml`
  /// and `root` are its folder, the splits its train and val (or test) folders.
  bool classify = false;
  int nc() const { return static_cast<int>(names.size()); }
  /// True when the split is named in the YAML.
  bool has(const std::string& split) const { return splits.count(split) != 0; }
};

/// Parses a data.yaml: `path`, `train`, `val`, optional `test` (each a folder, a .txt file listing
/// image paths, or a list of those), `names` (a list or an index map) and optional `nc` (checked
/// against `names`), and a pose dataset's `kpt_shape` and `flip_idx` (checked as Ultralytics' pose
/// trainer checks them: [n > 0, 2 or 3]; flip_idx of length n, here also a permutation of 0..n-1).
/// Unlike Ultralytics, a relative `path` is resolved against the YAML's own folder
/// first, then against the current folder; a missing `path` means the YAML's folder. Split entries
/// are resolved against `path`. Throws yolotrain::Error naming the file and key on any problem.
DataConfig load_data_yaml(const std::filesystem::path& yaml);

/// The image files of one split, sorted by path: the images in each folder (recursively, by
/// extension; Ultralytics' list: bmp dng jpeg jpg mpo png tif tiff webp pfm) and the lines of each
/// .txt list (relative lines are relative to the list's folder). Throws when an entry is missing.
std::vector<std::filesystem::path> list_images(const std::vector<std::filesystem::path>& entries);

/// The label file of an image: the last "/images/" replaced by "/labels/", extension by ".txt".
std::filesystem::path label_path_for(const std::filesystem::path& image);

}  // namespace yolotrain::data
