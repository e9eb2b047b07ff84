#include "run_folder.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include <torch/cuda.h>

#include "yolotrain/data/synthetic.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"

namespace yolotrain::engine {
namespace fs = std::filesystem;

namespace {

// data=shapes-cls: the classification variant's folder (data::shapes_cls_options()).
fs::path shapes_cls_folder(const TrainConfig& cfg) {
  const fs::path dir = fs::path(cfg.project) / ".shapes-cls";
  if (fs::is_directory(dir / "val")) return dir;
  std::cout << "data=shapes-cls: writing the built-in synthetic classification dataset to " << dir.string()
            << std::endl;
  return data::write_shapes_dataset(dir, data::shapes_cls_options());
}

}  // namespace

fs::path data_yaml(const TrainConfig& cfg) {
  if (cfg.data == "shapes-cls") return shapes_cls_folder(cfg);
  const bool segments = cfg.data == "shapes-seg", keypoints = cfg.data == "shapes-pose",
             oriented = cfg.data == "shapes-obb";
  if (cfg.data != "shapes" && !segments && !keypoints && !oriented && !cfg.data.empty()) return cfg.data;
  // "-v2": the plainer set (issue 13); a folder written by an older yolotrain is left alone.
  const std::string name = cfg.data.empty() || cfg.data == "shapes" ? "shapes-v2" : cfg.data;
  const fs::path dir = fs::path(cfg.project) / ("." + name);
  if (fs::exists(dir / "data.yaml")) return dir / "data.yaml";
  std::cout << "data=" << (cfg.data.empty() ? "shapes" : cfg.data) << ": writing the built-in synthetic dataset to "
            << dir.string() << std::endl;
  data::ShapesOptions options = oriented ? data::shapes_obb_options() : data::ShapesOptions{};
  options.segments = segments;
  options.keypoints = keypoints;
  return data::write_shapes_dataset(dir, options);
}

void merge_classes(data::Dataset& set) {
  for (auto& r : set.records) {
    for (auto& b : r.boxes) b.cls = 0;
    if (r.category > 0) r.category = 0;  // a classification image: Ultralytics' single_cls samples (f, 0)
  }
  set.names = {"item"};
}


namespace {
int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }
}  // namespace

int intra_op_threads(std::int64_t threads, int ranks_on_machine) {
  return threads > 0 ? static_cast<int>(threads) : std::max(1, cores() / std::max(1, ranks_on_machine));
}

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && text.size() < 4 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

c10::Device run_device(const std::string& device, int local_rank) {
  if (device == "cpu") return c10::Device(c10::kCPU);
  if (device.empty() && !lifecycle::cuda_usable()) return c10::Device(c10::kCPU);
  int index = local_rank;
  if (device.rfind("cuda:", 0) == 0 && all_digits(device.substr(5))) {
    index = std::stoi(device.substr(5));
  } else if (all_digits(device)) {
    index = std::stoi(device);  // Ultralytics' device=0
  } else if (device.find(',') != std::string::npos) {
    throw ConfigError("device=" + device + ": one process trains on one GPU; for several, start one process per GPU "
                      "with torchrun (scripts/torchrun --nproc-per-node N ..., docs/dist.md)");
  } else if (!device.empty() && device != "cuda") {
    throw ConfigError("device=" + device + ": expected cpu, cuda, cuda:N or a GPU index N (empty: a GPU when one is "
                      "usable, else the CPU)");
  }
  if (!lifecycle::cuda_usable()) {
    throw ConfigError("device=" + device + ": no CUDA device is usable here" +
                      (lifecycle::built_with_cuda() ? "" : " (this build's libtorch has no CUDA)") +
                      "; use device=cpu");
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  if (index >= count) {
    throw ConfigError("device=" + (device.empty() ? std::string("cuda") : device) + ": GPU " + std::to_string(index) +
                      " does not exist (" + std::to_string(count) + " visible)");
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

int loader_workers(const TrainConfig& cfg) { return static_cast<int>(std::min<std::int64_t>(cfg.workers, cores())); }

fs::path make_run_dir(const fs::path& project, const std::string& name, bool exist_ok, const std::string& subfolder) {
  fs::path dir = project / name;
  if (!exist_ok) {
    for (int n = 2; fs::exists(dir); ++n) dir = project / (name + std::to_string(n));
  }
  std::error_code ec;
  fs::create_directories(subfolder.empty() ? dir : dir / subfolder, ec);
  if (ec) {
    throw ConfigError("cannot create the run folder " + dir.string() + ": " + ec.message() +
                      "; choose another project= or check its permissions");
  }
  return dir;
}

}  // namespace yolotrain::engine
