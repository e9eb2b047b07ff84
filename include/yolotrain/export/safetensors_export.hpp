#pragma once

#include <filesystem>

namespace yolotrain::exporter {

/// Writes the weights of `weights` (a checkpoint's EMA weights, an Ultralytics `.pt`, or
/// `.safetensors`: io::read_model_weights()) with Ultralytics' names to `out` (safetensors, in
/// their stored dtype, the class names as `names` metadata); the bytes depend only on
/// the weights (no date: two runs that end with the same weights export the same file). Returns `out`.
std::filesystem::path export_safetensors(const std::filesystem::path& weights, const std::filesystem::path& out);

}  // namespace yolotrain::exporter
