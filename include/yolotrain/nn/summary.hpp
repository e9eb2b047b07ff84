#pragma once

#include <cstdint>
#include <string>

#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::nn {

/// Figures of a model, as Ultralytics' model.info() prints them.
struct ModelSummary {
  /// Model name, e.g. "yolov8n" (YAML stem with the scale).
  std::string name;
  /// Modules in the model tree, the model itself included, counting the Conv blocks' SiLUs once
  /// (they are one shared module in Ultralytics): 225 for yolov8n, 168 once fused.
  int64_t layers = 0;
  /// Parameter elements.
  int64_t parameters = 0;
  /// Parameter elements that require grad.
  int64_t gradients = 0;
  /// GFLOPs of one image at the summary's image size (see count_gflops()).
  double gflops = 0;
  /// "yolov8n summary: 225 layers, 3,157,200 parameters, 3,157,184 gradients, 8.7 GFLOPs".
  std::string to_string() const;
};

/// GFLOPs of one imgsz x imgsz image, counted as Ultralytics prints them: 2 * the multiply-
/// accumulates of every Conv2d (out.numel() * Cin/groups * kh * kw, bias and BatchNorm ignored),
/// over the decoding forward (the DFL's 1x1 conv included, as thop counts it). Runs a small no-grad
/// forward in eval mode (BatchNorm statistics are untouched and the mode is restored): at 2x the
/// largest stride, scaled by area when imgsz is a multiple of it, else at imgsz.
double count_gflops(DetectionModelImpl& model, int64_t imgsz = 640);

/// The model's summary at `imgsz`.
ModelSummary summarize(DetectionModelImpl& model, int64_t imgsz = 640);

}  // namespace yolotrain::nn
