// yolo_dataset: check a YOLO dataset before a long run, or write the synthetic shapes dataset.
//   yolo_dataset check DATA_YAML
//   yolo_dataset shapes OUT_DIR [--seed S] [--train N] [--val M] [--imgsz Z]
//                [--segments | --keypoints | --classes | --obb]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "yolotrain/data.hpp"

namespace fs = std::filesystem;
namespace yd = yolotrain::data;

namespace {

int usage() {
  std::cerr << "usage: yolo_dataset check DATA_YAML\n"
               "       yolo_dataset shapes OUT_DIR [--seed S] [--train N] [--val M] [--imgsz Z]\n"
               "                           [--segments | --keypoints | --classes | --obb]\n";
  return 2;
}

struct SplitResult {
  std::string name;
  yd::Dataset dataset;
  std::string error;  ///< set when the split is unusable
};

SplitResult check_split(const yd::DataConfig& cfg, const std::string& split) {
  SplitResult r{split, {}, {}};
  yd::ScanOptions opt;
  opt.use_cache = false;  // check always validates afresh and writes nothing
  opt.kpt_shape = cfg.kpt_shape;  // a pose dataset's rows: box + keypoints
  try {
    const auto images = yd::list_images(cfg.splits.at(split));
    if (images.empty()) {
      r.error = "no images";
      return r;
    }
    r.dataset = yd::scan_images(images, cfg.names, opt);
    if (r.dataset.records.empty()) r.error = "no usable image";
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

void print_table(const std::vector<SplitResult>& results) {
  std::printf("%-6s %8s %12s %8s %11s %8s\n", "split", "images", "backgrounds", "corrupt", "duplicates", "boxes");
  for (const auto& r : results) {
    const auto& rep = r.dataset.report;
    std::printf("%-6s %8zu %12zu %8zu %11zu %8zu%s\n", r.name.c_str(), rep.images, rep.backgrounds,
                rep.corrupt.size(), rep.duplicates, rep.boxes, r.error.empty() ? "" : "  UNUSABLE");
  }
}

void print_classes(const yd::DataConfig& cfg, const std::vector<SplitResult>& results) {
  std::printf("\nboxes per class\n%4s %-20s", "id", "class");
  for (const auto& r : results) std::printf(" %8s", r.name.c_str());
  std::printf("\n");
  for (int c = 0; c < cfg.nc(); ++c) {
    std::printf("%4d %-20s", c, cfg.names[c].c_str());
    for (const auto& r : results) {
      const auto& per = r.dataset.report.boxes_per_class;
      std::printf(" %8zu", per.empty() ? std::size_t(0) : per[c]);
    }
    std::printf("\n");
  }
}

void print_problems(const std::vector<SplitResult>& results) {
  bool header = false;
  for (const auto& r : results) {
    for (const auto& p : r.dataset.report.corrupt) {
      if (!header) std::printf("\ncorrupt files (skipped)\n"), header = true;
      std::printf("  %s: %s: %s\n", r.name.c_str(), p.file.string().c_str(), p.reason.c_str());
    }
  }
  header = false;
  for (const auto& r : results)
    for (const auto& w : r.dataset.report.warnings) {
      if (!header) std::printf("\nwarnings\n"), header = true;
      std::printf("  %s: %s\n", r.name.c_str(), w.c_str());
    }
  for (const auto& r : results)
    if (!r.error.empty()) std::printf("\nerror: split '%s' is unusable: %s\n", r.name.c_str(), r.error.c_str());
}

int check(const fs::path& yaml) {
  yd::DataConfig cfg;
  try {
    cfg = yd::load_data_yaml(yaml);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::printf("data: %s\nroot: %s\nclasses: %d\n\n", cfg.yaml.string().c_str(), cfg.root.string().c_str(), cfg.nc());
  std::vector<SplitResult> results;
  for (const char* split : {"train", "val", "test"})
    if (cfg.has(split)) results.push_back(check_split(cfg, split));
  print_table(results);
  print_classes(cfg, results);
  print_problems(results);
  bool ok = true;
  for (const auto& r : results) ok = ok && r.error.empty();
  std::printf("\n%s\n", ok ? "OK: every split is usable" : "FAILED: a split is unusable");
  return ok ? 0 : 1;
}

int shapes(std::vector<std::string> args) {
  if (args.empty()) return usage();
  const auto classes = std::find(args.begin() + 1, args.end(), "--classes");  // class folders (shapes-cls)
  yd::ShapesOptions o = classes != args.end() ? yd::shapes_cls_options() : yd::ShapesOptions{};
  if (classes != args.end()) args.erase(classes);
  const auto flag = std::find(args.begin() + 1, args.end(), "--segments");  // polygon labels
  if (flag != args.end()) o.segments = true, args.erase(flag);
  const auto pose = std::find(args.begin() + 1, args.end(), "--keypoints");  // pose labels (shapes-pose)
  if (pose != args.end()) o.keypoints = true, args.erase(pose);
  const auto obb = std::find(args.begin() + 1, args.end(), "--obb");  // oriented boxes' corners (shapes-obb)
  if (obb != args.end()) o.oriented = true, args.erase(obb);
  for (std::size_t i = 1; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) return usage();
    char* end = nullptr;
    const long long v = std::strtoll(args[i + 1].c_str(), &end, 10);
    if (*end != '\0' || v < 0) {
      std::cerr << "error: " << args[i] << " needs a non-negative integer, got '" << args[i + 1] << "'\n";
      return 2;
    }
    if (args[i] == "--seed") o.seed = static_cast<std::uint64_t>(v);
    else if (args[i] == "--train") o.train = static_cast<int>(v);
    else if (args[i] == "--val") o.val = static_cast<int>(v);
    else if (args[i] == "--imgsz") o.imgsz = static_cast<int>(v);
    else return usage();
  }
  try {
    const fs::path yaml = yd::write_shapes_dataset(args[0], o);
    std::printf("wrote %s (%d train, %d val images of %d px, seed %llu%s)\n", yaml.string().c_str(), o.train, o.val,
                o.imgsz, static_cast<unsigned long long>(o.seed), o.segments    ? ", polygon labels"
                : o.keypoints ? ", pose labels"
                : o.classify  ? ", class folders"
                : o.oriented  ? ", oriented box corners"
                              : "");
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "check") return check(args[1]);
  if (!args.empty() && args[0] == "shapes") return shapes({args.begin() + 1, args.end()});
  return usage();
}
