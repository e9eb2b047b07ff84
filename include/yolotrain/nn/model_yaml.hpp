#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace yolotrain::nn {

/// A model YAML found for a model name, and the scale the name asks for.
struct ModelSource {
  /// The YAML file.
  std::filesystem::path path;
  /// The scale guessed from the name ("n" for yolov8n.yaml), empty when the name has none.
  std::string scale;
};

/// Folders searched for model YAMLs given by name, in order: each entry of the YOLOTRAIN_MODELS
/// environment variable (':'-separated), the installed share/yolotrain/models next to the
/// library, the install prefix chosen at build time, and the source tree's models/ folder.
/// Folders that do not exist are left out.
std::vector<std::filesystem::path> model_search_paths();

/// Resolves a model name or path as Ultralytics does: an existing file is used as is; otherwise
/// the name is looked up in model_search_paths(), first as written ("yolov8n.yaml"), then with
/// the scale letter removed ("yolov8.yaml" with scale "n"). Throws yolotrain::Error listing the
/// folders searched when nothing is found.
ModelSource resolve_model(const std::string& name_or_path);

/// The scale letter in a model name (yolov8n.yaml -> "n"), or "" (Ultralytics' guess_model_scale).
std::string guess_model_scale(const std::string& name);

/// Rounds x up to a multiple of divisor (Ultralytics' make_divisible).
int64_t make_divisible(double x, int64_t divisor);

}  // namespace yolotrain::nn
