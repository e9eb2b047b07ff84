#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "yolotrain/lifecycle/files/safetensors.hpp"

namespace yolotrain::io {

/// What an Ultralytics checkpoint (`yolov8n.pt`, a run's `best.pt` / `last.pt` / `epochN.pt`)
/// holds of a YOLOv8 detection model, read without Python (read_ultralytics_pt()).
struct UltralyticsCheckpoint {
  /// The model's state dict under Ultralytics' names ("model.0.conv.weight", ...), in its
  /// order, as stored (float16 in released and stripped files).
  lifecycle::NamedTensors state_dict;
  /// Which entry the weights came from: "ema" when present, else "model" (as Ultralytics loads).
  std::string source;
  std::int64_t nc = 0;             ///< number of classes
  std::vector<std::string> names;  ///< class names by index
  std::string scale;               ///< "n", "s", ... (the model YAML's `scale`, else from the stem width)
  std::string yaml_file;           ///< the model YAML it was built from ("yolov8n.yaml"), if recorded
  std::vector<std::int64_t> kpt_shape;  ///< a PoseModel's keypoints (its yaml's kpt_shape); empty otherwise
  /// `train_args` as text (numbers and booleans as Python writes them: "16", "True", "0.01").
  std::map<std::string, std::string> train_args;
  std::string version;             ///< the Ultralytics version that wrote it, if recorded
  std::string date;                ///< when it was written, if recorded
  std::int64_t epoch = -1;         ///< the epoch (-1 in a finished run's stripped files)
  /// Whose construction the pickled modules follow, read from the file: "8.3" when its SPPF's cv1
  /// has a SiLU (Ultralytics 8.0 to 8.3), "8.4" when it has none (8.4.0 removed it); empty without
  /// an SPPF. What nn::DetectionModelOptions::ultralytics must say to build the same network.
  std::string builds_like;
};

/// Reads an Ultralytics `.pt` (torch.save of a dict with `model` / `ema` DetectionModel objects)
/// through read_torch_archive(): nothing in it is executed; its classes are names. The model's
/// tensors are collected from the modules' `_parameters` and `_buffers` as PyTorch's
/// state_dict() orders them. Throws yolotrain::Error naming the file and what was found for
/// anything but a YOLOv8-style detection model: a file that is not a torch.save archive, a
/// checkpoint without `model`/`ema`, another task (SegmentationModel, PoseModel, ...), or a
/// module class yolotrain does not implement (e.g. an RT-DETR or YOLOv10 layer).
UltralyticsCheckpoint read_ultralytics_pt(const std::filesystem::path& path);

/// read_ultralytics_pt() of a file's bytes already in memory; `name` is used in messages.
UltralyticsCheckpoint read_ultralytics_pt_bytes(const std::vector<std::uint8_t>& bytes, const std::string& name);

}  // namespace yolotrain::io
