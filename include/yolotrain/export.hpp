#pragma once

/// yolotrain::exporter — deploying a model: ONNX (a graph built module by module, checked by
/// ONNX's checker) and safetensors with Ultralytics' names.
#include "yolotrain/export/export_config.hpp"
#include "yolotrain/export/onnx_export.hpp"
#include "yolotrain/export/safetensors_export.hpp"
