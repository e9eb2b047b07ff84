#pragma once
// Helpers of the data tests: the shared datasets, small generated images and datasets.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/image.hpp"

namespace yolotrain::test {

/// ../shared/datasets/<name>, or "" (with a WARN) when the shared folder is absent.
inline std::filesystem::path shared_dataset(const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(YOLOTRAIN_SHARED_DIR) / "datasets" / name;
  return std::filesystem::exists(p / "data.yaml") ? p : std::filesystem::path();
}

/// Scan options that neither read nor write a labels cache.
inline data::ScanOptions no_cache() {
  data::ScanOptions o;
  o.use_cache = false;
  return o;
}

/// Whether the scan skipped `file` (a file name) with a reason containing `text`.
inline bool has_problem(const data::ScanReport& r, const std::string& file, const std::string& text) {
  return std::any_of(r.corrupt.begin(), r.corrupt.end(), [&](const data::Problem& p) {
    return p.file.filename() == file && p.reason.find(text) != std::string::npos;
  });
}

/// Writes `text` to `path`, creating its folder.
inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

/// A w x h image with a smooth, non-symmetric pattern (so orientation and scaling are visible).
inline data::Image pattern_image(int h, int w) {
  data::Image im(h, w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::uint8_t* p = im.pixel(y, x);
      p[0] = static_cast<std::uint8_t>(255 * x / w);
      p[1] = static_cast<std::uint8_t>(255 * y / h);
      p[2] = static_cast<std::uint8_t>((x / 16 + y / 16) % 2 ? 200 : 40);
    }
  return im;
}

/// Writes a JPEG of pattern_image() to `path`, creating its folder.
inline void write_jpeg(const std::filesystem::path& path, int h = 64, int w = 96) {
  std::filesystem::create_directories(path.parent_path());
  data::write_bytes(path, data::encode_jpeg(pattern_image(h, w), 90));
}

}  // namespace yolotrain::test
