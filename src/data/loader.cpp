// The threaded loader: workers build samples by position, the caller assembles batches in order.
#include "yolotrain/data/loader.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "pipeline.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/signal_binding.hpp"

namespace yolotrain::data {
namespace {

struct Slot {
  Labelled sample;
  LetterboxInfo info;
  std::exception_ptr error;
};

/// Copies BGR HWC uint8 into RGB CHW float / 255.
void to_chw(const Image& im, float* dst) {
  const std::size_t plane = static_cast<std::size_t>(im.height) * im.width;
  const std::uint8_t* p = im.pixels.data();
  for (std::size_t i = 0; i < plane; ++i, p += 3) {
    dst[i] = p[2] / 255.f;
    dst[plane + i] = p[1] / 255.f;
    dst[2 * plane + i] = p[0] / 255.f;
  }
}

}  // namespace

struct Loader::Impl {
  Dataset dataset;
  LoaderOptions opt;
  std::unique_ptr<detail::RamCache> cache;
  detail::PipelineContext ctx;

  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  std::atomic<bool> stopping{false};
  std::uint64_t generation = 0;
  int epoch = 0;
  std::int64_t batch = 0;  // next batch next() returns
  std::vector<std::size_t> order;
  std::vector<std::pair<int, int>> shapes;  // rect batch shapes
  std::size_t next_task = 0, consumed = 0;
  std::map<std::size_t, Slot> ready;
  std::vector<std::thread> threads;
  std::mutex join_mutex;  // stop() may be called from another thread and again by the destructor

  /// Global position (into the epoch's order) of this rank's local position `local`.
  std::size_t global(std::size_t local) const {
    return static_cast<std::size_t>(opt.rank) + static_cast<std::size_t>(opt.world_size) * local;
  }

  std::pair<int, int> shape_of(std::size_t position) const {
    return opt.rect ? shapes[position / opt.batch] : std::make_pair(opt.imgsz, opt.imgsz);
  }

  Slot produce(int ep, std::size_t position, std::size_t index, std::pair<int, int> shape) const {
    Slot slot;
    try {
      slot.sample = detail::build_sample(ctx, ep, position, index, shape, slot.info);
    } catch (const std::exception& e) {
      slot.error = std::make_exception_ptr(Error("data loader: sample " + std::to_string(position) + " of epoch " +
                                                 std::to_string(ep) + " (" + dataset.records[index].image.string() +
                                                 "): " + e.what()));
    }
    return slot;
  }

  void work() {
    lifecycle::block_lifecycle_signals_in_this_thread();
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      const std::size_t window = consumed + static_cast<std::size_t>(opt.prefetch_batches) * opt.batch;
      if (next_task >= order.size() || next_task >= window) {
        work_cv.wait(lock);
        continue;
      }
      const std::size_t pos = next_task++;
      const std::uint64_t gen = generation;
      const int ep = epoch;
      const std::size_t index = order[pos];
      const auto shape = shape_of(pos);
      lock.unlock();
      Slot slot = produce(ep, global(pos), index, shape);
      lock.lock();
      if (gen == generation) {
        ready[pos] = std::move(slot);
        done_cv.notify_all();
      }
    }
  }

  bool stop_asked() const { return opt.token && opt.token->stop_requested(); }

  /// Waits for sample `pos`; nothing when the token asks to stop first (the sample stays queued).
  std::optional<Slot> take(std::size_t pos) {
    if (threads.empty()) return produce(epoch, global(pos), order[pos], shape_of(pos));
    std::unique_lock<std::mutex> lock(mutex);
    const auto poll = std::chrono::milliseconds(opt.token ? 10 : 1000);
    while (!stopping && !ready.count(pos)) {
      if (stop_asked()) return std::nullopt;
      done_cv.wait_for(lock, poll);
    }
    if (stopping) throw Error("data loader: stopped");
    return std::move(ready[pos]);
  }
};

Loader::Loader(const Dataset& dataset, LoaderOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.batch < 1) throw Error("data loader: batch must be >= 1");
  if (options.imgsz < options.stride || options.imgsz % options.stride)
    throw Error("data loader: imgsz " + std::to_string(options.imgsz) + " must be a multiple of stride " +
                std::to_string(options.stride));
  if (dataset.records.empty()) throw Error("data loader: the dataset has no images");
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw Error("data loader: rank " + std::to_string(options.rank) + " of world_size " +
                std::to_string(options.world_size) + " is not a valid shard (0 <= rank < world_size)");
  Impl& d = *impl_;
  d.dataset = dataset;
  d.opt = options;
  if (options.cache_ram) d.cache = std::make_unique<detail::RamCache>(dataset.size());
  d.ctx = {&d.dataset, &d.opt, d.cache.get()};
  seek(0, 0);
  for (int i = 0; i < options.workers; ++i) d.threads.emplace_back([&d] { d.work(); });
}

Loader::~Loader() { stop(); }

void Loader::stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->work_cv.notify_all();
  impl_->done_cv.notify_all();
  std::lock_guard<std::mutex> lock(impl_->join_mutex);
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
}

void Loader::seek(int epoch, std::int64_t batch_index) {
  Impl& d = *impl_;
  if (batch_index < 0 || batch_index > batches_per_epoch())
    throw Error("data loader: batch " + std::to_string(batch_index) + " is outside epoch (0.." +
                std::to_string(batches_per_epoch()) + ")");
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    ++d.generation;
    d.epoch = epoch;
    d.batch = batch_index;
    d.order = detail::epoch_order(d.dataset, d.opt, epoch);
    if (d.opt.world_size > 1) {
      std::vector<std::size_t> shard;
      for (std::size_t p : shard_positions(d.order.size(), d.opt.rank, d.opt.world_size))
        shard.push_back(d.order[p % d.order.size()]);
      d.order = std::move(shard);
    }
    if (d.opt.rect) d.shapes = detail::rect_batch_shapes(d.dataset, d.opt, d.order);
    d.ready.clear();
    d.next_task = d.consumed = std::min(d.order.size(), static_cast<std::size_t>(batch_index) * d.opt.batch);
  }
  d.work_cv.notify_all();
}

std::optional<Batch> Loader::next() {
  Impl& d = *impl_;
  if (d.stopping) throw Error("data loader: stopped");
  const std::size_t begin = static_cast<std::size_t>(d.batch) * d.opt.batch;
  if (begin >= d.order.size()) return std::nullopt;
  const std::size_t end = std::min(d.order.size(), begin + d.opt.batch);
  std::vector<Slot> slots;
  for (std::size_t p = begin; p < end; ++p) {
    std::optional<Slot> slot = d.take(p);
    if (!slot) return std::nullopt;  // stop requested: samples stay queued, the batch is not consumed
    if (slot->error) {
      seek(d.epoch, d.batch);  // a retry rebuilds this batch
      std::rethrow_exception(slot->error);
    }
    slots.push_back(std::move(*slot));
  }
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    for (std::size_t p = begin; p < end; ++p) d.ready.erase(p);
    d.consumed = end;
  }
  d.work_cv.notify_all();

  Batch b;
  b.epoch = d.epoch;
  b.index = d.batch++;
  const int B = static_cast<int>(slots.size());
  const int H = slots[0].sample.image.height, W = slots[0].sample.image.width;
  b.img = at::empty({B, 3, H, W}, at::kFloat);
  std::vector<float> idx, cls, boxes;
  for (int i = 0; i < B; ++i) {
    const Labelled& s = slots[i].sample;
    if (s.image.height != H || s.image.width != W) throw Error("data loader: images of one batch differ in size");
    to_chw(s.image, b.img.data_ptr<float>() + static_cast<std::size_t>(i) * 3 * H * W);
    const ImageRecord& rec = d.dataset.records[d.order[begin + i]];
    b.im_file.push_back(rec.image.string());
    b.ori_shape.emplace_back(rec.height, rec.width);
    b.resized_shape.emplace_back(H, W);
    b.ratio_pad.push_back(slots[i].info);
    for (const PixelBox& p : s.boxes) {
      idx.push_back(static_cast<float>(i));
      cls.push_back(static_cast<float>(p.cls));
      boxes.insert(boxes.end(), {(p.x1 + p.x2) / 2 / W, (p.y1 + p.y2) / 2 / H, (p.x2 - p.x1) / W, (p.y2 - p.y1) / H});
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(idx.size());
  b.batch_idx = at::from_blob(idx.data(), {n}, at::kFloat).clone();
  b.cls = at::from_blob(cls.data(), {n, 1}, at::kFloat).clone();
  b.bboxes = at::from_blob(boxes.data(), {n, 4}, at::kFloat).clone();
  return b;
}

std::int64_t Loader::batches_per_epoch() const {
  return (samples_per_epoch() + impl_->opt.batch - 1) / impl_->opt.batch;
}

std::int64_t Loader::samples_per_epoch() const {
  const auto size = static_cast<std::int64_t>(impl_->dataset.size());
  return (size + impl_->opt.world_size - 1) / impl_->opt.world_size;
}

std::int64_t Loader::global_samples(std::int64_t batch_index) const {
  return batch_index * impl_->opt.batch * impl_->opt.world_size;
}

std::int64_t Loader::batch_for_global_samples(std::int64_t samples) const {
  if (samples < 0) throw Error("data loader: a negative sample position (" + std::to_string(samples) + ")");
  const std::int64_t global_batch = static_cast<std::int64_t>(impl_->opt.batch) * impl_->opt.world_size;
  return std::min(samples / global_batch, batches_per_epoch());
}

std::vector<std::size_t> shard_positions(std::size_t size, int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw Error("data loader: rank " + std::to_string(rank) + " of world_size " + std::to_string(world_size) +
                " is not a valid shard");
  const auto w = static_cast<std::size_t>(world_size);
  const std::size_t total = (size + w - 1) / w * w;
  std::vector<std::size_t> out;
  out.reserve(total / w);
  for (std::size_t p = static_cast<std::size_t>(rank); p < total; p += w) out.push_back(p);
  return out;
}

std::vector<std::size_t> Loader::order(int epoch) const {
  return detail::epoch_order(impl_->dataset, impl_->opt, epoch);
}

bool Loader::mosaic_enabled(int epoch) const { return detail::mosaic_enabled(impl_->opt, epoch); }

const LoaderOptions& Loader::options() const { return impl_->opt; }

Labelled make_sample(const Dataset& dataset, const LoaderOptions& options, int epoch, std::size_t position,
                     LetterboxInfo* info) {
  const detail::PipelineContext ctx{&dataset, &options, nullptr};
  const auto order = detail::epoch_order(dataset, options, epoch);
  std::pair<int, int> shape{options.imgsz, options.imgsz};
  if (options.rect) shape = detail::rect_batch_shapes(dataset, options, order)[position / options.batch];
  LetterboxInfo local;
  const auto world = static_cast<std::size_t>(std::max(1, options.world_size));
  if (position >= (order.size() + world - 1) / world * world)
    throw Error("data loader: sample " + std::to_string(position) + " is outside the epoch");
  return detail::build_sample(ctx, epoch, position, order[position % order.size()], shape, info ? *info : local);
}

}  // namespace yolotrain::data
