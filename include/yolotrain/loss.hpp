#pragma once

/// The YOLOv8 training loss: anchors, box and IoU ops, the task-aligned assigner and the v8
/// detection loss (box CIoU, BCE classification, distribution focal loss).
#include "yolotrain/error.hpp"
#include "yolotrain/loss/box_ops.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/loss/e2e_loss.hpp"
#include "yolotrain/loss/segmentation_loss.hpp"
#include "yolotrain/loss/task_aligned_assigner.hpp"
