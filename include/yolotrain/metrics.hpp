#pragma once

/// Evaluation: NMS, box IoU and letterbox undo, Ultralytics' greedy matching, AP / mAP50 /
/// mAP50-95 / fitness, and a Validator that accumulates them image by image.
#include "yolotrain/error.hpp"
#include "yolotrain/metrics/ap.hpp"
#include "yolotrain/metrics/boxes.hpp"
#include "yolotrain/metrics/classify_metrics.hpp"
#include "yolotrain/metrics/confusion_matrix.hpp"
#include "yolotrain/metrics/det_metrics.hpp"
#include "yolotrain/metrics/nms.hpp"
#include "yolotrain/metrics/obb.hpp"
#include "yolotrain/metrics/validator.hpp"
