#pragma once

/// yolotrain::engine — TrainConfig, the Trainer (the run's lifecycle around YOLOv8 training),
/// validation (`yolo_train val`) and export.
#include "yolotrain/engine/model_ema.hpp"
#include "yolotrain/engine/step_profile.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/engine/validate.hpp"
