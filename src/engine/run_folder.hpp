#pragma once

// Run folders and results.csv, as Ultralytics lays them out (private to the engine).

#include <filesystem>
#include <string>
#include <vector>

#include "yolotrain/engine/trainer.hpp"

namespace yolotrain::engine {

/// project/name, or project/name2, name3, ... when it exists and !exist_ok (Ultralytics'
/// increment_path). Creates the folder and its weights/ subfolder; throws yolotrain::Error when
/// it cannot.
std::filesystem::path make_run_dir(const std::filesystem::path& project, const std::string& name, bool exist_ok);

/// The data.yaml a run reads: `data`, or for data=shapes (or none) the built-in synthetic set in
/// project/.shapes, written there on first use.
std::filesystem::path data_yaml(const TrainConfig& cfg);

/// results.csv's header line (Ultralytics' columns, each right-aligned in 23 characters).
std::string results_csv_header();
/// One results.csv row for `m`, formatted as Ultralytics does (%23.5g).
std::string results_csv_row(const EpochMetrics& m);

}  // namespace yolotrain::engine
