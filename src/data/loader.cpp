// The threaded loader: workers build samples by position, the caller assembles batches in order.
#include "yolotrain/data/loader.hpp"

#include <ATen/ATen.h>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "opencv_view.hpp"
#include "pipeline.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/data/masks.hpp"
#include "yolotrain/data/rotated_boxes.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::data {
namespace detail {

/// A built sample: its pixels are already in its batch's tensor. (In `detail`, not an anonymous
/// namespace: Loader::Impl holds it, and a unity build compiles this file as an included one.)
struct Slot {
  std::vector<PixelBox> boxes;
  LetterboxInfo info;
  at::Tensor masks;     ///< with mask_ratio: [h, w] (overlap) or [n, h, w], float32
  at::Tensor semantic;  ///< with mask_ratio: [h, w] float32
  std::exception_ptr error;
};

/// Ultralytics' Format._format_segments and its sem_masks: the slot's masks from its outlines at
/// 1 / ratio of (h, w); with overlap the boxes take the index mask's order.
void format_masks(Slot& slot, int h, int w, int ratio, bool overlap) {
  Polygons outlines;
  std::vector<float> classes;
  for (const PixelBox& b : slot.boxes) {
    if (b.segment.empty()) {
      throw Error("a box without an outline: segmentation needs polygon labels (class x1 y1 x2 y2 ...) for every "
                  "instance");
    }
    outlines.push_back(b.segment);
    classes.push_back(static_cast<float>(b.cls));
  }
  if (!overlap) {
    slot.masks = polygons_to_masks(h, w, outlines, ratio).to(at::kFloat);
    slot.semantic = semantic_from_masks(slot.masks, at::tensor(classes));
    return;
  }
  OverlapMask om = polygons_to_overlap_mask(h, w, outlines, ratio);
  std::vector<PixelBox> ordered;
  std::vector<float> ordered_classes;
  for (int64_t k : om.order) {
    ordered.push_back(std::move(slot.boxes[static_cast<size_t>(k)]));
    ordered_classes.push_back(classes[static_cast<size_t>(k)]);
  }
  slot.boxes = std::move(ordered);
  slot.semantic = semantic_from_overlap(om.mask, at::tensor(ordered_classes));
  slot.masks = om.mask.to(at::kFloat);
}

}  // namespace detail

namespace {

using detail::Slot;

/// Copies BGR HWC into RGB CHW (Ultralytics' collate layout), uint8 both (OpenCV's SIMD split).
void to_chw(const Image& im, std::uint8_t* dst) {
  const std::size_t plane = static_cast<std::size_t>(im.height) * im.width;
  std::vector<cv::Mat> bgr_planes;
  for (int c : {2, 1, 0}) bgr_planes.emplace_back(im.height, im.width, CV_8UC1, dst + c * plane);
  cv::split(detail::view(im), bgr_planes);
}

// Batch::targets from the collated boxes (image index, class, and `width` numbers of box each: xywh,
// or xywh and angle), written on the host.
at::Tensor padded_targets(int images, const std::vector<float>& idx, const std::vector<float>& cls,
                          const std::vector<float>& boxes, std::int64_t width, bool pin_memory) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(images), 0);
  for (float i : idx) ++count[static_cast<std::size_t>(i)];
  const std::int64_t rows = padded_target_rows(count.empty() ? 0 : *std::max_element(count.begin(), count.end()));
  at::Tensor out = at::zeros({images, rows, 1 + width}, at::TensorOptions(at::kFloat).pinned_memory(pin_memory));
  float* o = out.data_ptr<float>();
  std::fill(count.begin(), count.end(), 0);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto i = static_cast<std::size_t>(idx[k]);
    float* row = o + (static_cast<std::int64_t>(i) * rows + count[i]++) * (1 + width);
    row[0] = cls[k];
    const auto from = boxes.begin() + static_cast<std::ptrdiff_t>(static_cast<std::int64_t>(k) * width);
    std::copy(from, from + width, row + 1);
  }
  return out;
}

// One box as the batch holds it: normalized xywh, or with `obb` its outline's rotated box (Format
// with return_obb: xyxyxyxy2xywhr in pixels, then x and w over the width, y and h over the height).
void append_box(std::vector<float>& boxes, const PixelBox& p, float W, float H, bool obb) {
  if (!obb) {
    boxes.insert(boxes.end(), {(p.x1 + p.x2) / 2 / W, (p.y1 + p.y2) / 2 / H, (p.x2 - p.x1) / W, (p.y2 - p.y1) / H});
    return;
  }
  const std::array<float, 5> r = outline_xywhr(p.segment);
  boxes.insert(boxes.end(), {r[0] / W, r[1] / H, r[2] / W, r[3] / H, r[4]});
}

}  // namespace

std::int64_t padded_target_rows(std::int64_t most) {
  std::int64_t rows = 8;
  while (rows < most) rows *= 2;
  return rows;
}

struct Loader::Impl {
  Dataset dataset;
  LoaderOptions opt;
  std::unique_ptr<detail::RamCache> cache;
  std::unique_ptr<detail::RecentImages> recent;
  detail::PipelineContext ctx;
  detail::SampleBuffers caller_buffers;  // workers = 0: the caller's thread builds the samples

  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  std::atomic<bool> stopping{false};
  std::uint64_t generation = 0;
  int epoch = 0;
  std::int64_t batch = 0;  // next batch next() returns
  std::shared_ptr<const std::vector<std::size_t>> global_order;  // the whole epoch order (partners)
  std::vector<std::size_t> order;           // this rank's records, by local position
  std::vector<std::pair<int, int>> shapes;  // rect batch shapes
  std::size_t next_task = 0, consumed = 0;
  std::map<std::size_t, Slot> ready;
  std::map<std::size_t, at::Tensor> pixels;  // batch index -> its uint8 [B,3,H,W], filled by the workers
  std::vector<std::thread> threads;
  std::mutex join_mutex;  // stop() may be called from another thread and again by the destructor

  /// Global position (into the epoch's order) of this rank's local position `local`.
  std::size_t global(std::size_t local) const {
    return static_cast<std::size_t>(opt.rank) + static_cast<std::size_t>(opt.world_size) * local;
  }

  std::pair<int, int> shape_of(std::size_t position) const {
    return opt.rect ? shapes[position / opt.batch] : std::make_pair(opt.imgsz, opt.imgsz);
  }

  /// The uint8 tensor batch `pos / batch` is assembled in (made by the first sample that needs it).
  at::Tensor batch_pixels(std::size_t pos) {
    const std::size_t b = pos / opt.batch;
    at::Tensor& t = pixels[b];
    if (!t.defined()) {
      const std::size_t begin = b * opt.batch, size = std::min<std::size_t>(opt.batch, order.size() - begin);
      const auto [h, w] = shape_of(begin);
      t = at::empty({static_cast<std::int64_t>(size), 3, h, w},
                    at::TensorOptions(at::kByte).pinned_memory(opt.pin_memory));
    }
    return t;
  }

  /// One sample's work, outside the lock: local position `pos` of epoch `ep`, written into `img`.
  struct Task {
    int epoch = 0;
    std::size_t pos = 0;
    std::shared_ptr<const std::vector<std::size_t>> order;
    std::pair<int, int> shape;
    at::Tensor img;
  };

  Task next_task_locked(std::size_t pos) {
    return {epoch, pos, global_order, shape_of(pos), batch_pixels(pos)};
  }

  Slot produce(const Task& t, detail::SampleBuffers& buffers) const {
    Slot slot;
    try {
      detail::build_sample(ctx, t.epoch, global(t.pos), *t.order, t.shape, buffers, slot.info);
      const Image& im = buffers.sample.image;
      if (im.height != t.shape.first || im.width != t.shape.second)
        throw Error("a " + std::to_string(im.height) + "x" + std::to_string(im.width) + " sample in a batch of " +
                    std::to_string(t.shape.first) + "x" + std::to_string(t.shape.second));
      const std::size_t k = t.pos % opt.batch;
      to_chw(im, t.img.data_ptr<std::uint8_t>() + k * im.pixels.size());
      slot.boxes = std::move(buffers.sample.boxes);
      if (opt.mask_ratio > 0) detail::format_masks(slot, im.height, im.width, opt.mask_ratio, opt.overlap_mask);
    } catch (const std::exception& e) {
      const std::size_t record = order[t.pos];
      slot.error = std::make_exception_ptr(Error("data loader: sample " + std::to_string(global(t.pos)) + " of epoch " +
                                                 std::to_string(t.epoch) + " (" +
                                                 dataset.records[record].image.string() + "): " + e.what()));
    }
    return slot;
  }

  void work() {
    lifecycle::block_lifecycle_signals_in_this_thread();
    detail::SampleBuffers buffers;
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      const std::size_t window = consumed + static_cast<std::size_t>(opt.prefetch_batches) * opt.batch;
      if (next_task >= order.size() || next_task >= window) {
        work_cv.wait(lock);
        continue;
      }
      const Task task = next_task_locked(next_task++);
      const std::uint64_t gen = generation;
      lock.unlock();
      Slot slot = produce(task, buffers);
      lock.lock();
      if (gen == generation) {
        ready[task.pos] = std::move(slot);
        done_cv.notify_all();
      }
    }
  }

  bool stop_asked() const { return opt.token && opt.token->stop_requested(); }

  /// Waits for sample `pos`; nothing when the token asks to stop first (the sample stays queued).
  std::optional<Slot> take(std::size_t pos) {
    if (threads.empty()) {
      Task task;
      {
        std::lock_guard<std::mutex> lock(mutex);
        task = next_task_locked(pos);
      }
      return produce(task, caller_buffers);
    }
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
  if (options.pin_memory && !at::hasCUDA())
    throw Error("data loader: pin_memory needs libtorch with CUDA and a GPU (this one has none); leave it off");
  if (options.classify) {
    if (!dataset.records.empty() && dataset.records.front().category < 0)
      throw Error("data loader: classify needs a classification dataset (images with a class each)");
    options.rect = false;  // classification batches are imgsz squares (Ultralytics has no rect for them)
  }
  Impl& d = *impl_;
  d.dataset = dataset;
  d.opt = options;
  if (options.cache_ram) d.cache = std::make_unique<detail::RamCache>(dataset.size());
  else if (options.augment && options.hyp.mosaic > 0)
    d.recent = std::make_unique<detail::RecentImages>(detail::recent_images_capacity(options, dataset.size()));
  d.ctx = {&d.dataset, &d.opt, d.cache.get(), d.recent.get()};
  seek(0, 0);
  // As Ultralytics (cv2.setNumThreads(0) at import): OpenCV's own thread pool would compete with
  // the workers (and the training threads) for the same cores. Process-wide, like theirs.
  if (options.workers > 0) cv::setNumThreads(0);
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
    d.global_order = std::make_shared<const std::vector<std::size_t>>(detail::epoch_order(d.dataset, d.opt, epoch));
    const std::vector<std::size_t>& all = *d.global_order;
    d.order.clear();
    for (std::size_t p : shard_positions(all.size(), d.opt.rank, d.opt.world_size))
      d.order.push_back(all[p % all.size()]);
    if (d.opt.rect) d.shapes = detail::rect_batch_shapes(d.dataset, d.opt, d.order);
    d.ready.clear();
    d.pixels.clear();  // workers still busy with an old batch hold its tensor themselves
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
  Batch b;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    for (std::size_t p = begin; p < end; ++p) d.ready.erase(p);
    d.consumed = end;
    const auto it = d.pixels.find(static_cast<std::size_t>(d.batch));
    if (it == d.pixels.end())
      throw Error("data loader: batch " + std::to_string(d.batch) + " lost its images (seek() from another thread?)");
    b.img = std::move(it->second);
    d.pixels.erase(it);
  }
  d.work_cv.notify_all();

  b.epoch = d.epoch;
  b.index = d.batch++;
  const int B = static_cast<int>(slots.size());
  const int H = static_cast<int>(b.img.size(2)), W = static_cast<int>(b.img.size(3));
  std::vector<float> idx, cls, boxes, keypoints;
  for (int i = 0; i < B; ++i) {
    const ImageRecord& rec = d.dataset.records[d.order[begin + i]];
    b.im_file.push_back(rec.image.string());
    b.ori_shape.emplace_back(rec.height, rec.width);
    b.resized_shape.emplace_back(H, W);
    b.ratio_pad.push_back(slots[i].info);
    for (const PixelBox& p : slots[i].boxes) {
      idx.push_back(static_cast<float>(i));
      cls.push_back(static_cast<float>(p.cls));
      if (d.opt.obb && p.segment.empty())
        throw Error("data loader: " + rec.image.string() + " has a box without its outline; an OBB batch needs "
                    "every label as corners (class x1 y1 x2 y2 x3 y3 x4 y4)");
      append_box(boxes, p, static_cast<float>(W), static_cast<float>(H), d.opt.obb);
      for (size_t k = 0; k < p.keypoints.size(); k += 3)
        keypoints.insert(keypoints.end(), {p.keypoints[k] / W, p.keypoints[k + 1] / H, p.keypoints[k + 2]});
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(idx.size());
  const std::int64_t width = d.opt.obb ? 5 : 4;
  b.targets = padded_targets(B, idx, cls, boxes, width, d.opt.pin_memory);
  // Page-locked with pin_memory, as the images: their copies to the GPU then wait for nothing.
  const auto owned = [pin = d.opt.pin_memory](std::vector<float>& v, at::IntArrayRef shape) {
    return at::empty(shape, at::TensorOptions(at::kFloat).pinned_memory(pin)).copy_(at::from_blob(v.data(), shape));
  };
  b.batch_idx = owned(idx, {n});
  b.cls = owned(cls, {n, 1});
  if (d.opt.classify) {  // Ultralytics' classification batch: each image's class index
    std::vector<std::int64_t> categories;
    for (int i = 0; i < B; ++i) categories.push_back(d.dataset.records[d.order[begin + i]].category);
    const auto count = static_cast<std::int64_t>(categories.size());
    b.cls = at::empty({count}, at::TensorOptions(at::kLong).pinned_memory(d.opt.pin_memory))
                .copy_(at::from_blob(categories.data(), {count}, at::kLong));
  }
  b.bboxes = owned(boxes, {n, width});
  if (const auto& shape = d.dataset.kpt_shape) {
    if (keypoints.size() != static_cast<std::size_t>(n * (*shape)[0] * 3))
      throw Error("data loader: a pose batch's boxes lack keypoints (kpt_shape [" + std::to_string((*shape)[0]) +
                  ", " + std::to_string((*shape)[1]) + "])");
    b.keypoints = owned(keypoints, {n, (*shape)[0], 3});
  }
  if (d.opt.mask_ratio > 0) {  // Ultralytics' collate: cat for masks, stack for sem_masks
    std::vector<at::Tensor> masks, semantic;
    for (const Slot& s : slots) {
      masks.push_back(d.opt.overlap_mask ? s.masks.unsqueeze(0) : s.masks);
      semantic.push_back(s.semantic);
    }
    b.masks = at::cat(masks);
    b.sem_masks = at::stack(semantic);
  }
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
  const detail::PipelineContext ctx{&dataset, &options, nullptr, nullptr};
  const auto order = detail::epoch_order(dataset, options, epoch);
  std::pair<int, int> shape{options.imgsz, options.imgsz};
  if (options.rect) shape = detail::rect_batch_shapes(dataset, options, order)[position / options.batch];
  LetterboxInfo local;
  const auto world = static_cast<std::size_t>(std::max(1, options.world_size));
  if (position >= (order.size() + world - 1) / world * world)
    throw Error("data loader: sample " + std::to_string(position) + " is outside the epoch");
  detail::SampleBuffers buffers;
  detail::build_sample(ctx, epoch, position, order, shape, buffers, info ? *info : local);
  return std::move(buffers.sample);
}

at::Tensor preprocess_images(const at::Tensor& img, const at::Device& device) {
  return at::div(img.to(device, /*non_blocking=*/true), 255);  // uint8 -> float32 / 255, one pass
}

}  // namespace yolotrain::data
