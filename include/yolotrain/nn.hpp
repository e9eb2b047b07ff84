#pragma once

/// yolotrain::nn — YOLOv8 and YOLO11 modules, DetectionModel built from a model YAML, and weight exchange
/// with Ultralytics (safetensors with Ultralytics' state-dict names).

#include "yolotrain/nn/anchors.hpp"
#include "yolotrain/nn/attention.hpp"
#include "yolotrain/nn/block.hpp"
#include "yolotrain/nn/classify.hpp"
#include "yolotrain/nn/conv.hpp"
#include "yolotrain/nn/detect.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/layer_kind.hpp"
#include "yolotrain/nn/memory_format.hpp"
#include "yolotrain/nn/model_yaml.hpp"
#include "yolotrain/nn/proto.hpp"
#include "yolotrain/nn/summary.hpp"
#include "yolotrain/nn/weights.hpp"
