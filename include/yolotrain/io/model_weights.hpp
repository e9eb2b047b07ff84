#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "yolotrain/lifecycle/files/safetensors.hpp"
#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::io {

/// A detection model's weights from any file yolotrain reads, with what is needed to build the
/// network they fit (read_model_weights()).
struct ModelWeights {
  lifecycle::NamedTensors tensors;  ///< state dict under Ultralytics' names
  std::string model_yaml;           ///< the model to build: "yolov8n.yaml" ... or the YAML path a run used
  std::int64_t nc = 0;              ///< classes of the head
  std::vector<std::string> names;   ///< class names; "0", "1", ... where the file records none
  std::string format;               ///< "ytckpt", "safetensors" or "pt"
  std::string description;          ///< for messages ("Ultralytics 8.2.82 checkpoint (ema)", ...)
  std::string date;                 ///< when the weights were written (ISO 8601): the file's record, else its mtime
  /// nn::DetectionModelOptions::ultralytics for the network they fit: a `.pt` says it by its SPPF,
  /// a safetensors file by its `ultralytics` metadata, a checkpoint by its run's compat=; files
  /// without it were written before yolotrain built like 8.4, so "8.3".
  std::string builds_like = "8.3";
  /// A pose model's keypoints {n, dims} (nn::DetectionModelOptions::kpt_shape): a `.pt`'s recorded
  /// kpt_shape, a checkpoint's run's; empty for other models (or unknown: the data's is then used).
  std::vector<std::int64_t> kpt_shape;
};

/// Reads the weights of a YOLOv8 detection model from
/// - a yolo_train checkpoint (`.ytckpt`): its EMA weights, model YAML and class names;
/// - `.safetensors` with Ultralytics' names (exported by `yolo_train export` or
///   scripts/export_ultralytics_weights.py): the scale and nc from the tensor shapes, names
///   from its `names` metadata when present;
/// - an Ultralytics `.pt` (read_ultralytics_pt()): EMA when present, else the model.
/// Throws yolotrain::Error naming the file for a missing file, another extension, or a file
/// that holds no YOLOv8 detection weights.
ModelWeights read_model_weights(const std::filesystem::path& path);

/// The network the weights fit (their model YAML with their nc and names), loaded with them
/// strictly, in float32 and train mode; `source` names the file in messages.
nn::DetectionModel build_model(const ModelWeights& weights, const std::string& source);

/// True for the extensions read_model_weights() takes (.ytckpt, .safetensors, .pt).
bool is_weights_file(const std::filesystem::path& path);

/// "yolo26" when the weights have an end-to-end head (`*.one2one_cv2.*`), "yolo11" when they have
/// YOLO11's Detect class branch (`*.cv3.0.0.0.conv.weight`) or, classification weights, its C2PSA
/// (YOLO26-cls has YOLO11-cls's network: "yolo11"), else "yolov8".
std::string family_from_weights(const lifecycle::NamedTensors& tensors);

/// The scale letter of YOLOv8 / YOLO11 / YOLO26 weights from the stem's output channels (YOLOv8: 16 n,
/// 32 s, 48 m, 64 l, 80 x; YOLO11 and YOLO26: 16 n, 32 s, 64 m or l (l has model.2.m.1), 96 x); throws
/// yolotrain::Error naming `source` for weights without `model.0.conv.weight` or of another width.
std::string scale_from_weights(const lifecycle::NamedTensors& tensors, const std::string& source);

/// The model YAML name for weights ("yolo11n.yaml"; "yolo11n-seg.yaml" when they hold a Proto,
/// "yolo11n-pose.yaml" when they hold a keypoint branch, "yolo11n-cls.yaml" a Classify head's Linear):
/// family_from_weights() + `scale` (from the weights when empty).
std::string model_yaml_from_weights(const lifecycle::NamedTensors& tensors, const std::string& scale,
                                    const std::string& source);

/// nc of the weights: the output channels of a detection head's `*.cv3.0.2.weight`, or of a Classify
/// head's `*.linear.weight`; throws yolotrain::Error naming `source` when there is neither.
std::int64_t nc_from_weights(const lifecycle::NamedTensors& tensors, const std::string& source);

/// Class names as the metadata of yolo_train's checkpoints and safetensors store them (a JSON
/// list), and back; decode_names() returns {} for text that is not such a list.
std::string encode_names(const std::vector<std::string>& names);
std::vector<std::string> decode_names(const std::string& text);

}  // namespace yolotrain::io
