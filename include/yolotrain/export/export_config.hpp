#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "yolotrain/export/onnx_export.hpp"

namespace yolotrain::exporter {

/// `yolo_train export` arguments: Ultralytics' export names where they apply.
struct ExportConfig {
  std::string model;                 ///< weights: .pt, .ytckpt or .safetensors
  std::string format = "safetensors";  ///< safetensors or onnx
  OnnxExportOptions onnx;            ///< imgsz, batch, dynamic, opset, half (format=onnx)

  /// Parses key=value arguments; a bad key or value throws ConfigError naming it.
  static ExportConfig from_args(const std::vector<std::string>& args);
  /// The arguments with their defaults and meaning, for --help.
  static std::vector<std::array<std::string, 3>> describe();
};

/// Where an export of `weights` in `format` goes: beside it, `W.onnx` / `W.safetensors`
/// (`W.export.safetensors` for a .safetensors input, never over its own input).
std::filesystem::path export_path(const std::filesystem::path& weights, const std::string& format);

/// Runs `yolo_train export`: writes the file and prints what was written (Ultralytics' lines:
/// the input and output shapes, the format's success line with the size). Returns the path.
/// Weights that cannot be read or exported throw yolotrain::Error naming the file.
std::filesystem::path run_export(const ExportConfig& config);

}  // namespace yolotrain::exporter
