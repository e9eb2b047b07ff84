#pragma once

// Run folders and results.csv, as Ultralytics lays them out, and what a run (training or `val`)
// takes from its arguments: the dataset, the threads, the image size (private to the engine).

#include <filesystem>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/engine/trainer.hpp"

namespace yolotrain::engine {

/// project/name, or project/name2, name3, ... when it exists and !exist_ok (Ultralytics'
/// increment_path). Creates the folder and its `subfolder` (weights/ for training; none when
/// empty); throws yolotrain::Error when it cannot.
std::filesystem::path make_run_dir(const std::filesystem::path& project, const std::string& name, bool exist_ok,
                                   const std::string& subfolder = "weights");

/// The data.yaml a run reads: `data`, or for data=shapes (or none) the built-in synthetic set in
/// project/.shapes-v2, for data=shapes-seg (shapes-pose) its polygon (keypoint) variant in
/// project/.shapes-seg (.shapes-pose), written there on first use; for data=shapes-cls the
/// classification variant's folder, project/.shapes-cls (a classification dataset is a folder).
std::filesystem::path data_yaml(const TrainConfig& cfg);

/// single_cls: every label (and a classification image's class) becomes class 0, named "item".
void merge_classes(data::Dataset& set);


/// Intra-op threads: `threads` when positive, else the cores shared among the ranks on this
/// machine (libtorch's own default is its count of physical cores: 1 on a 2-vCPU VM here).
int intra_op_threads(std::int64_t threads, int ranks_on_machine = 1);

/// The device `device` names, as Ultralytics spells it: "" (cuda when usable, else cpu), cpu,
/// cuda, cuda:N or N. Without an index the GPU is `local_rank`'s (one per process under torchrun).
/// Throws ConfigError for another spelling, several GPUs ("0,1": one process each), an unusable
/// CUDA or an index beyond the devices present.
c10::Device run_device(const std::string& device, int local_rank = 0);

/// Loader threads: `workers`, at most one per core (as Ultralytics: more only fight the
/// training threads).
int loader_workers(const TrainConfig& cfg);

}  // namespace yolotrain::engine
