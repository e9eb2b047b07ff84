#include "yolotrain/data/class_folders.hpp"

#include "scan_threads.hpp"

#include <algorithm>

#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data {
namespace {

std::vector<std::string> class_folders(const fs::path& split) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(split)) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Ultralytics' check_cls_dataset: val, else validation, else valid, else test.
fs::path validation_split(const fs::path& root) {
  for (const char* name : {"val", "validation", "valid", "test"}) {
    if (fs::is_directory(root / name)) return root / name;
  }
  return {};
}

}  // namespace

bool is_class_folders(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_directory(path / "train", ec);
}

DataConfig load_class_folders(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error(root.string() + ": no such folder (a classification dataset)");
  if (!fs::is_directory(root / "train", ec)) {
    throw Error(root.string() + ": a classification dataset needs a 'train' folder holding one folder per class "
                "(train/<class>/*.jpg), and 'val' (or 'test') laid out the same way");
  }
  DataConfig c;
  c.classify = true;
  c.yaml = c.root = fs::absolute(root).lexically_normal();
  c.names = class_folders(c.root / "train");
  if (c.names.empty()) {
    throw Error((c.root / "train").string() + ": no class folders; put each class's images in a folder named "
                "after the class (train/cat/*.jpg, train/dog/*.jpg)");
  }
  c.splits["train"] = {c.root / "train"};
  if (const fs::path val = validation_split(c.root); !val.empty()) c.splits["val"] = {val};
  if (fs::is_directory(c.root / "test", ec)) c.splits["test"] = {c.root / "test"};
  return c;
}

DataConfig load_dataset_config(const fs::path& data) {
  std::error_code ec;
  return fs::is_directory(data, ec) ? load_class_folders(data) : load_data_yaml(data);
}

Dataset load_class_split(const DataConfig& config, const std::string& split, const ScanOptions& options) {
  const auto it = config.splits.find(split);
  if (it == config.splits.end()) throw Error(config.root.string() + ": no '" + split + "' folder");
  const fs::path dir = it->second.at(0);
  Dataset ds;
  ds.split = split;
  ds.names = config.names;
  for (const fs::path& image : list_images({dir})) {
    const fs::path cls = image.parent_path();
    if (cls.parent_path() != dir) {
      throw Error(image.string() + ": a classification image must lie in its class's folder (" + dir.string() +
                  "/<class>/), not " + (cls == dir ? "in the split folder itself" : "deeper"));
    }
    const auto name = std::find(ds.names.begin(), ds.names.end(), cls.filename().string());
    if (name == ds.names.end()) {
      throw Error(cls.string() + ": class '" + cls.filename().string() + "' is not one of train's " +
                  std::to_string(ds.names.size()) + " class folders; every split needs the same class folders");
    }
    ImageRecord r;
    r.image = image;
    r.category = static_cast<int>(name - ds.names.begin());
    ds.records.push_back(std::move(r));
  }
  if (ds.records.empty()) throw Error(dir.string() + ": no images in its class folders (jpg jpeg png ...)");
  std::stable_sort(ds.records.begin(), ds.records.end(),
                   [](const ImageRecord& a, const ImageRecord& b) { return a.category < b.category; });
  std::vector<std::string> problems(ds.records.size());  // Ultralytics' verify_images, a header each
  detail::parallel_for(ds.records.size(), options.threads > 0 ? options.threads : detail::default_threads(),
                       [&](std::size_t i) {
                         try {
                           const ImageInfo info = verify_image(ds.records[i].image);
                           ds.records[i].height = info.height, ds.records[i].width = info.width;
                           ds.records[i].orientation = info.orientation;
                         } catch (const std::exception& e) {
                           problems[i] = e.what();
                         }
                       });
  std::vector<ImageRecord> usable;
  ds.report.images_per_class.assign(ds.names.size(), 0);
  for (std::size_t i = 0; i < ds.records.size(); ++i) {
    if (!problems[i].empty()) {
      ds.report.corrupt.push_back({ds.records[i].image, problems[i]});
      continue;
    }
    ++ds.report.images;
    ++ds.report.images_per_class[static_cast<std::size_t>(ds.records[i].category)];
    usable.push_back(std::move(ds.records[i]));
  }
  ds.records = std::move(usable);
  if (ds.records.empty()) {
    throw Error(dir.string() + ": no usable image (" + std::to_string(ds.report.corrupt.size()) + " corrupt, e.g. " +
                ds.report.corrupt.front().file.string() + ": " + ds.report.corrupt.front().reason + ")");
  }
  return ds;
}

}  // namespace yolotrain::data
