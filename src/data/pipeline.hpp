#pragma once
// One sample of an epoch: load (decode, resize, RAM cache), then the train or val pipeline.
#include <memory>
#include <mutex>
#include <vector>

#include "yolotrain/data/loader.hpp"

namespace yolotrain::data::detail {

/// Decoded, resized images kept in memory (cache=ram); safe to share between threads.
class RamCache {
 public:
  explicit RamCache(std::size_t n) : slots_(n) {}
  std::shared_ptr<const Image> get(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    return slots_[i];
  }
  void put(std::size_t i, std::shared_ptr<const Image> image) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!slots_[i]) slots_[i] = std::move(image);
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<const Image>> slots_;
};

/// Everything a sample depends on besides (epoch, position).
struct PipelineContext {
  const Dataset* dataset = nullptr;
  const LoaderOptions* options = nullptr;
  RamCache* cache = nullptr;  ///< null: no RAM cache
};

/// Whether mosaic is used in `epoch` (augmenting, mosaic > 0 and not in the close_mosaic epochs).
bool mosaic_enabled(const LoaderOptions& opt, int epoch);

/// The record order of `epoch`: a seeded shuffle, the aspect-ratio order for rect, or identity.
std::vector<std::size_t> epoch_order(const Dataset& ds, const LoaderOptions& opt, int epoch);

/// Rect mode: the (h, w) letterbox shape of each batch, in batch order.
std::vector<std::pair<int, int>> rect_batch_shapes(const Dataset& ds, const LoaderOptions& opt,
                                                   const std::vector<std::size_t>& order);

/// Builds the sample at `position` (record `index`) of `epoch`; `shape` is the letterbox target.
Labelled build_sample(const PipelineContext& ctx, int epoch, std::size_t position, std::size_t index,
                      std::pair<int, int> shape, LetterboxInfo& info);

}  // namespace yolotrain::data::detail
