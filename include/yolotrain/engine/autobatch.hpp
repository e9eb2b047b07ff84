#pragma once

// AutoBatch: batch=-1 (60 % of the GPU's memory) or batch=0.xx (that fraction), as Ultralytics'
// utils/autobatch.py (8.2 / 8.3): a forward + backward at a few batch sizes, the memory each
// reserves fitted by a line, and the largest batch whose fitted memory fills the fraction.
// The measuring goes through MemoryProbe, so the fitting and the choice are tested on any
// machine with synthetic memory curves; the CUDA probe is cuda_memory_probe().

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace yolotrain::engine {

/// A device's memory as AutoBatch reads it, in GiB (2^30 bytes).
struct DeviceMemory {
  std::string name;  ///< "CUDA:0 (NVIDIA H200)"
  double total = 0, reserved = 0, allocated = 0;
  double free() const { return total - (reserved + allocated); }
};

/// What AutoBatch measures with.
class MemoryProbe {
 public:
  virtual ~MemoryProbe() = default;
  /// The device's memory before any trial.
  virtual DeviceMemory memory() = 0;
  /// Runs one training forward + backward of `batch` images and returns the memory then reserved
  /// on the device, in GB (1e9 bytes, as Ultralytics' profile() reports it); nothing when the
  /// device ran out of memory. Any other failure throws.
  virtual std::optional<double> measure(std::int64_t batch) = 0;
};

/// One AutoBatch decision and why.
struct AutoBatchChoice {
  std::int64_t batch = 16;
  bool fallback = false;                 ///< the default batch, for the reason in `lines`
  std::vector<std::int64_t> sizes;       ///< the batch sizes tried
  std::vector<std::optional<double>> gb; ///< memory reserved at each (GB); nothing: out of memory
  double slope = 0, intercept = 0;       ///< the fitted line, GB = slope * batch + intercept
  double used_fraction = 0;              ///< the fitted memory at `batch` over the total
  std::vector<std::string> lines;        ///< what Ultralytics prints, "AutoBatch: ..." each
};

/// The choice from measurements (Ultralytics' rule): fit gb[i] against sizes[i] over the sizes
/// that did not run out of memory (the first ones), batch = int((free * fraction - intercept) /
/// slope); when a size ran out of memory and batch reaches it, the size before it; outside
/// 1..1024, or with fewer than two measurements, `default_batch`. Units as Ultralytics has them:
/// free memory in GiB against a fit in GB (docs/engine.md "AutoBatch").
AutoBatchChoice choose_batch(const DeviceMemory& memory, const std::vector<std::int64_t>& sizes,
                             const std::vector<std::optional<double>>& gb, double fraction, std::int64_t default_batch);

/// Measures with `probe` at 1, 2, 4, 8, 16 (and 32, 64 with 16 GiB or more) and chooses.
/// `imgsz` only appears in the first line. Without a probe (training on the CPU) or when the
/// probe throws: `default_batch`, with the reason in `lines`, as Ultralytics.
AutoBatchChoice autobatch(MemoryProbe* probe, std::int64_t imgsz, double fraction, std::int64_t default_batch = 16);

}  // namespace yolotrain::engine
