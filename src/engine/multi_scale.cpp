#include "multi_scale.hpp"

#include <algorithm>

#include "yolotrain/data/rng.hpp"

namespace yolotrain::engine {

SizeRange multi_scale_range(const TrainConfig& cfg, std::int64_t gs) {
  const double f = cfg.ultralytics84() ? cfg.multi_scale : 0.5;  // 8.3: a bool, +-50 %
  const auto low = static_cast<std::int64_t>(double(cfg.imgsz) * (1.0 - f));
  return {cfg.ultralytics84() ? std::max(gs, low) : low,
          static_cast<std::int64_t>(double(cfg.imgsz) * (1.0 + f) + double(gs))};
}

std::int64_t multi_scale_size(const TrainConfig& cfg, std::int64_t gs, std::int64_t ni) {
  const SizeRange r = multi_scale_range(cfg, gs);
  data::Rng rng(static_cast<std::uint64_t>(cfg.seed), 0x6d756c7469ull, static_cast<std::uint64_t>(ni));
  return (r.lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(r.hi - r.lo)))) / gs * gs;
}

}  // namespace yolotrain::engine
