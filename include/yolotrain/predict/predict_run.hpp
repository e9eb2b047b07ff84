#pragma once

#include <cstdint>
#include <filesystem>
#include <iostream>

#include "yolotrain/lifecycle/control/control_token.hpp"
#include "yolotrain/predict/predict_config.hpp"

namespace yolotrain::predict {

/// What `yolo_train predict` did.
struct PredictRunResult {
  std::int64_t images = 0;       ///< images predicted
  std::int64_t failed = 0;       ///< images (and videos) that could not be read, each reported by name
  std::int64_t detections = 0;   ///< boxes over all images
  std::int64_t label_files = 0;  ///< labels/<stem>.txt files written
  int stop_signal = 0;           ///< the signal that stopped the run between images (0: ran to the end)
  std::filesystem::path save_dir;  ///< runs/detect/predict, predict2, ... ("" when nothing is saved)
  /// 128 + signal when stopped, 1 when something failed, else 0.
  int exit_code() const { return stop_signal ? 128 + stop_signal : failed ? 1 : 0; }
};

/// `yolo_train predict`: predicts every image of `cfg.source` in batches of `cfg.batch` and, as
/// Ultralytics' predictor, prints one line per image to `out` ("image 3/8 /abs/x.jpg: 640x480
/// 2 persons, 1 bus, 41.2ms"), writes annotated images (`save`) and labels/<stem>.txt
/// (`save_txt`) into a new run folder, then the per-image speeds and where it saved. An image
/// that cannot be read is reported on `err` by name and skipped. A stop requested on `token`
/// (SIGINT, SIGTERM) ends the run between batches. Throws ConfigError for a source that
/// names nothing and yolotrain::Error for weights that cannot be read.
PredictRunResult run_predict(const PredictConfig& cfg, const lifecycle::ControlToken& token,
                             std::ostream& out = std::cout, std::ostream& err = std::cerr);

}  // namespace yolotrain::predict
