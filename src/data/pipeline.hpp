#pragma once
// One sample of an epoch: load (decode, resize, caches), then the train or val pipeline.
#include <map>
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

/// The decoded, resized images of the epoch positions around the ones being built, so that a
/// mosaic's partners (drawn from the positions just before a sample, see mosaic_window()) are
/// decoded once, not once per use. Keyed by (epoch, position); when full, the entry of the
/// earliest key goes first (the window only moves forward). Pixels are the same whether an image
/// comes from here or is decoded again, so hits and misses never change a batch. Thread-safe.
class RecentImages {
 public:
  explicit RecentImages(std::size_t capacity) : capacity_(capacity) {}
  using Key = std::pair<int, std::size_t>;
  std::shared_ptr<const Image> get(Key key);
  void put(Key key, std::shared_ptr<const Image> image);

 private:
  std::size_t capacity_;
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const Image>> images_;
};

/// Everything a sample depends on besides (epoch, position), and the caches that speed it up.
struct PipelineContext {
  const Dataset* dataset = nullptr;
  const LoaderOptions* options = nullptr;
  RamCache* cache = nullptr;      ///< null: no RAM cache
  RecentImages* recent = nullptr;  ///< null: every image decoded where it is used
};

/// The buffers one thread reuses for every sample it builds (see augment_into.hpp).
struct SampleBuffers {
  Labelled canvas;  ///< the mosaic's 2*imgsz canvas
  Labelled sample;  ///< the sample being built; its pixels are the result
};

/// Whether mosaic is used in `epoch` (augmenting, mosaic > 0 and not in the close_mosaic epochs).
bool mosaic_enabled(const LoaderOptions& opt, int epoch);

/// The record order of `epoch`: a seeded shuffle, the aspect-ratio order for rect, or identity.
std::vector<std::size_t> epoch_order(const Dataset& ds, const LoaderOptions& opt, int epoch);

/// Rect mode: the (h, w) letterbox shape of each batch, in batch order.
std::vector<std::pair<int, int>> rect_batch_shapes(const Dataset& ds, const LoaderOptions& opt,
                                                   const std::vector<std::size_t>& order);

/// Ultralytics' mosaic buffer length, min(n, 8 * batch, 1000), with the global batch
/// (batch * world_size) so that a position's partners do not depend on the number of ranks.
std::size_t mosaic_window(const LoaderOptions& opt, std::size_t n);

/// The capacity of the loader's RecentImages: the window, plus the positions the workers may be
/// ahead of the consumer.
std::size_t recent_images_capacity(const LoaderOptions& opt, std::size_t n);

/// Builds the sample at global `position` of `epoch` into `buffers.sample` (pixels of `shape` for
/// validation, imgsz square for training). `order` is the epoch's whole order (mosaic partners
/// come from it); the record is order[position % n].
void build_sample(const PipelineContext& ctx, int epoch, std::size_t position, const std::vector<std::size_t>& order,
                  std::pair<int, int> shape, SampleBuffers& buffers, LetterboxInfo& info);

}  // namespace yolotrain::data::detail
