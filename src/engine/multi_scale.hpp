#pragma once
// Ultralytics' multi_scale: each training batch resized to a random size (a multiple of the stride).
#include <cstdint>

#include "yolotrain/engine/train_config.hpp"

namespace yolotrain::engine {

/// The sizes random.randrange(lo, hi) draws from before they are floored to a multiple of the
/// stride `gs` (models/yolo/detect/train.py preprocess_batch): 8.4's [max(gs, int(imgsz (1 - f))),
/// int(imgsz (1 + f) + gs)) for multi_scale=f; compat=8.3's [int(imgsz / 2), int(1.5 imgsz + gs)).
struct SizeRange {
  std::int64_t lo = 0, hi = 0;
};
SizeRange multi_scale_range(const TrainConfig& cfg, std::int64_t gs);

/// Global step `ni`'s size: drawn from (seed, ni), so that a resumed run draws the same.
std::int64_t multi_scale_size(const TrainConfig& cfg, std::int64_t gs, std::int64_t ni);

}  // namespace yolotrain::engine
