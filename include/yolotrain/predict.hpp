#pragma once

/// yolotrain::predict — the Predictor (weights file -> detections in an image's pixels), predict
/// sources, annotated images, and `yolo_train predict`.
#include "yolotrain/predict/annotate.hpp"
#include "yolotrain/predict/predict_config.hpp"
#include "yolotrain/predict/predict_run.hpp"
#include "yolotrain/predict/predictor.hpp"
#include "yolotrain/predict/preprocess.hpp"
#include "yolotrain/predict/sources.hpp"
