#pragma once
// The labels cache: a split's scan results in one binary file beside its labels, under a name of
// its own (labels/train.yolotrain.cache, beside Ultralytics' labels/train.cache), read back on the
// next start instead of scanning again.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/data/dataset.hpp"

namespace yolotrain::data::detail {

/// The outcome of validating one image and its label file.
struct FileResult {
  bool ok = false;
  ImageRecord record;
  Problem problem;
  std::vector<std::string> warnings;
  std::size_t duplicates = 0;
};

/// The cache's results when the file exists, is whole (its SHA-256 matches), has this format
/// version and was written for `key`; nothing otherwise (the caller scans again).
std::optional<std::vector<FileResult>> read_labels_cache(const std::filesystem::path& path, const std::string& key);

/// Whether `path` is a file of ours (it starts with the cache's magic), of any format version.
bool is_labels_cache(const std::filesystem::path& path);

/// Writes the cache atomically; a failure is returned as its reason ("" when written).
std::string write_labels_cache(const std::filesystem::path& path, const std::string& key,
                               const std::vector<FileResult>& results);

}  // namespace yolotrain::data::detail
