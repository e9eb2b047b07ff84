#include "yolotrain/predict/sources.hpp"

#include <glob.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "yolotrain/error.hpp"

namespace yolotrain::predict {
namespace fs = std::filesystem;

namespace {

const std::set<std::string> kImageFormats = {"bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp", "pfm"};
const std::set<std::string> kVideoFormats = {"asf", "avi", "gif", "m4v", "mkv", "mov",
                                             "mp4", "mpeg", "mpg", "ts",  "wmv", "webm"};

// The text after the last '.', lower-cased (Ultralytics: x.split(".")[-1].lower()).
std::string suffix(const std::string& path) {
  const auto dot = path.rfind('.');
  std::string s = dot == std::string::npos ? path : path.substr(dot + 1);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> glob_sorted(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());  // Python's sorted(): by code point, not the locale
  return out;
}

void add_entry(const std::string& entry, const fs::path& list_dir, std::vector<std::string>& files) {
  const std::string a = fs::absolute(entry).string();
  if (a.find_first_of("*?[") != std::string::npos) {
    const auto found = glob_sorted(a);
    files.insert(files.end(), found.begin(), found.end());
  } else if (fs::is_directory(a)) {
    const auto found = glob_sorted((fs::path(a) / "*.*").string());
    files.insert(files.end(), found.begin(), found.end());
  } else if (fs::is_regular_file(a)) {
    files.push_back(a);
  } else if (!list_dir.empty() && fs::is_regular_file(list_dir / entry)) {
    files.push_back(fs::absolute(list_dir / entry).string());
  } else {
    throw Error("source " + entry + " does not exist");
  }
}

}  // namespace

SourceFiles expand_source(const std::string& source) {
  if (source.empty()) throw Error("predict needs source= (an image, a folder, a glob or a .txt list of paths)");
  std::vector<std::string> entries{source};
  fs::path list_dir;
  if (fs::path(source).extension() == ".txt") {
    std::ifstream in(source);
    if (!in) throw Error("source " + source + ": cannot open the list");
    entries.clear();
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) entries.push_back(line);
    }
    std::sort(entries.begin(), entries.end());
    list_dir = fs::path(source).parent_path();
  }
  std::vector<std::string> files;
  for (const auto& e : entries) add_entry(e, list_dir, files);
  SourceFiles out;
  for (const auto& f : files) {
    if (kImageFormats.count(suffix(f))) out.images.emplace_back(f);
    else if (kVideoFormats.count(suffix(f))) out.videos.emplace_back(f);
  }
  if (out.images.empty() && out.videos.empty()) {
    throw Error("no images or videos found in " + source +
                " (image formats: bmp dng jpeg jpg mpo png tif tiff webp pfm)");
  }
  return out;
}

}  // namespace yolotrain::predict
