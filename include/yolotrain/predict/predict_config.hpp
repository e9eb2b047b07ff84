#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolotrain/predict/annotate.hpp"
#include "yolotrain/predict/predictor.hpp"

namespace yolotrain::predict {

/// `yolo_train predict` arguments: Ultralytics' predict names and defaults.
struct PredictConfig {
  std::string model;                 ///< weights: .pt, .ytckpt or .safetensors
  std::string source;                ///< an image, a folder, a glob or a .txt list
  PredictOptions predictor;          ///< imgsz, conf, iou, max_det, classes, agnostic_nms, device, half
  AnnotateOptions annotate;          ///< line_width, show_labels, show_conf
  std::int64_t batch = 1;            ///< images per forward pass
  std::string project = "runs/detect";
  std::string name = "predict";
  bool exist_ok = false;
  bool save = true;                  ///< write annotated images
  bool save_txt = false;             ///< write labels/<stem>.txt (cls xc yc w h, normalised)
  bool save_conf = false;            ///< append the confidence to each txt row
  bool verbose = true;               ///< one line per image
  int threads = 0;                   ///< intra-op threads; 0: libtorch's default

  /// Parses key=value arguments; a bad key or value throws ConfigError naming it and
  /// what is allowed.
  static PredictConfig from_args(const std::vector<std::string>& args);
  /// The arguments with their defaults and meaning, for --help.
  static std::vector<std::array<std::string, 3>> describe();
};

}  // namespace yolotrain::predict
