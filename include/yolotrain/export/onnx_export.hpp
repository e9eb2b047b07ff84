#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::exporter {

/// Options of export_onnx(): Ultralytics' export arguments that apply to ONNX, with its defaults.
struct OnnxExportOptions {
  std::int64_t imgsz_h = 640;  ///< input height; rounded up to a multiple of the stride (with a warning)
  std::int64_t imgsz_w = 640;  ///< input width; likewise
  std::int64_t batch = 1;      ///< the input's batch (static export)
  bool dynamic = false;        ///< batch, height and width as symbolic axes ("batch", "height", "width")
  int opset = 17;              ///< ONNX opset, 12 to 17
  bool half = false;           ///< float16: refused with a warning, as Ultralytics does on the CPU
  /// An end-to-end head (YOLO26): true writes its (N, 300, 6) top-k output (x1 y1 x2 y2, score,
  /// class; no NMS needed), false the one-to-many branch's [B, 4 + nc, A] for NMS (Ultralytics'
  /// end2end=False). Other heads ignore it.
  bool end2end = true;
};

/// What the model's metadata properties say (Ultralytics' keys; see onnx_model()).
struct OnnxMetadata {
  std::string description;         ///< "yolotrain YOLOv8n model" ...
  std::string date;                ///< ISO 8601; fixed by the caller so that an export is reproducible
  std::vector<std::string> names;  ///< class names by index
};

/// What export_onnx() wrote.
struct OnnxExportReport {
  std::filesystem::path path;          ///< the .onnx file
  std::uintmax_t bytes = 0;            ///< its size
  std::int64_t imgsz_h = 0, imgsz_w = 0;  ///< the input size after rounding
  std::vector<std::string> warnings;   ///< each also printed to stderr
};

/// The ONNX model (serialised ModelProto) of `model`, which must be fused (DetectionModel::fuse())
/// and in eval mode: input `images` [B, 3, H, W] float32 RGB 0..1, output `output0` [B, 4 + nc, A]
/// (xywh in input pixels, class scores after the sigmoid), as Ultralytics' ONNX export; an
/// end-to-end head (YOLO26) in its end-to-end mode: [B, min(300, A), 6] (x1 y1 x2 y2 in input
/// pixels, score, class), as Ultralytics 8.4's (metadata end2end 'True'). The graph
/// is built layer by layer from the modules; weights keep their state-dict names. Metadata
/// properties: description, author, date, version, stride, task, batch, imgsz, names, written as
/// Ultralytics writes them (Python's str() of the value: imgsz "[640, 640]", names
/// "{0: 'person', ...}"). Checked with ONNX's checker; the same model and arguments give the same
/// bytes. Throws yolotrain::Error for opsets outside 12..17, sizes not multiples of the stride,
/// or a model that is not fused.
std::string onnx_model(nn::DetectionModelImpl& model, const OnnxExportOptions& options, const OnnxMetadata& metadata);

/// Reads `weights` (.pt, .ytckpt or .safetensors; io::read_model_weights()), builds and fuses the
/// model and writes its ONNX model to `out` atomically (an existing file stays untouched when
/// anything fails). The metadata date is the one the weights record (else the file's time), so
/// that the same weights give the same bytes. Throws yolotrain::Error naming the file and the cause.
OnnxExportReport export_onnx(const std::filesystem::path& weights, const std::filesystem::path& out,
                             OnnxExportOptions options = {});

/// Python's repr() of a string, as Ultralytics' metadata values carry them ('a', "it's").
std::string python_repr(const std::string& text);

}  // namespace yolotrain::exporter
