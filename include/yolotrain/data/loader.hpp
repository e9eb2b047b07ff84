#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/data/augment.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/lifecycle/control/control_token.hpp"

namespace yolotrain::data {

/// Options of a Loader (Ultralytics' names where they exist).
struct LoaderOptions {
  int batch = 16;
  int imgsz = 640;
  int workers = 2;             ///< threads decoding and augmenting; 0 = in the caller's thread
  std::uint64_t seed = 0;
  bool augment = true;         ///< training pipeline (mosaic, perspective, HSV, flips, mixup)
  bool shuffle = true;         ///< a new order per epoch, a function of (seed, epoch)
  bool rect = false;           ///< rectangular batches (validation): sorted by aspect ratio
  int stride = 32;
  double pad = 0.5;            ///< rect batch shapes: ceil(shape*imgsz/stride + pad)*stride
  AugmentConfig hyp;
  int epochs = 100;            ///< with close_mosaic: mosaic (and mixup) off from epochs - close_mosaic
  int close_mosaic = 10;
  bool cache_ram = false;      ///< cache=ram: keep decoded, resized images in memory
  /// Mosaic partners drawn from the whole dataset instead of the window of recently loaded images
  /// (Ultralytics 8.4's Mosaic with cache=ram: buffer_enabled false, data/augment.py:479-499).
  bool partners_from_all = false;
  int prefetch_batches = 4;    ///< bounded prefetch: samples at most this many batches ahead
  /// Batch images in page-locked host memory (Ultralytics' pin_memory on CUDA), so that the copy
  /// to the GPU can be non-blocking. Needs libtorch with CUDA and a GPU; an error otherwise.
  bool pin_memory = false;
  /// Decode large JPEGs with DCT scaling (faster; pixels differ slightly from Ultralytics' full
  /// decode + resize, see docs/data.md). Off: the reference's pixels.
  bool dct_scaling = false;
  /// Multi-process data parallelism (DistributedSampler's semantics): this process is `rank` of
  /// `world_size` and reads its shard of each epoch's order: positions rank, rank + world_size,
  /// ... of the order padded by wrapping around to a multiple of world_size, so every rank has
  /// the same number of samples and of batches. `batch` is per rank. A sample's augmentation
  /// depends on its global position, so the union of the ranks' batch k is the batch k of one
  /// process with batch * world_size. world_size 1 reads the whole order, as before.
  int rank = 0;
  int world_size = 1;
  /// Instance masks for segmentation (Ultralytics' Format with return_mask): each batch gets
  /// `masks` at 1 / mask_ratio of its size, built from the boxes' outlines (data/masks.hpp); 0: no
  /// masks (detection). The labels must be polygons.
  int mask_ratio = 0;
  /// One index mask per image, larger instances first (true, Ultralytics' default), or one mask
  /// per instance.
  bool overlap_mask = true;
  /// Classification (a class-folder dataset, ImageRecord::category): each image alone through
  /// Ultralytics' classification transforms (data/classify_transforms.hpp: training's random
  /// resized crop, flips, colour jitter and erasing, or validation's centre crop) to imgsz square;
  /// Batch::cls holds each image's class. No mosaic or boxes; `rect` is ignored.
  bool classify = false;
  /// Oriented boxes (Ultralytics' Format with return_obb, the OBB task): the labels' outlines (4
  /// corners, or polygons) resampled to 100 points rather than 1000 (YOLODataset.update_labels_info),
  /// carried through every augmentation, and each box in the batch the minimum-area rectangle of
  /// its outline (data/rotated_boxes.hpp): Batch::bboxes [N, 5] normalized x y w h (x and w over
  /// the width, y and h over the height) and the angle in radians, Batch::targets [B, M, 6]. The
  /// labels must be outlines.
  bool obb = false;
  /// When set, a next() waiting for workers returns nothing as soon as the token asks to stop
  /// (the caller tells that from an epoch end by token->stop_requested()). Not owned.
  const lifecycle::ControlToken* token = nullptr;
};

/// One batch in Ultralytics' fields.
struct Batch {
  at::Tensor img;        ///< uint8 [B,3,H,W] RGB, as Ultralytics' collate (see preprocess_images())
  at::Tensor batch_idx;  ///< float32 [N]
  at::Tensor cls;        ///< float32 [N,1]; classification (LoaderOptions::classify): int64 [B], each image's class
  at::Tensor bboxes;     ///< float32 [N,4], normalized xywh; with LoaderOptions::obb [N,5], xywh and angle
  /// The same boxes per image: float32 [B, M, 5] (class, normalized xywh; with LoaderOptions::obb
  /// [B, M, 6], the angle last), each image's boxes in
  /// order, then rows of zeros; M = padded_target_rows(the largest count). The loss's static
  /// shapes on a device: nothing about it has to be read back (docs/data.md "Batches").
  at::Tensor targets;
  /// With LoaderOptions::mask_ratio: float32 [B, h, w] index masks (overlap_mask; each image's
  /// boxes are then in the masks' order, larger first) or [N, h, w] 0/1 masks, one per box;
  /// h, w = the batch's size / mask_ratio. Undefined without.
  at::Tensor masks;
  /// With mask_ratio: float32 [B, h, w], the class of each pixel (YOLO26-seg's semantic target).
  at::Tensor sem_masks;
  /// A pose dataset's (Dataset::kpt_shape): float32 [N, kpt_shape[0], 3], each box's keypoints as
  /// x, y normalized to the batch image and visibility (0 for those augmentations moved out of the
  /// image), in bboxes' order (Ultralytics' Format with return_keypoint). Undefined without.
  at::Tensor keypoints;
  std::vector<std::string> im_file;
  std::vector<std::pair<int, int>> ori_shape;      ///< (h, w) of the source image
  std::vector<std::pair<int, int>> resized_shape;  ///< (h, w) of the batch image
  /// Per image ((gain_h, gain_w), (pad_x, pad_y)): batch pixel = source pixel * gain + pad.
  std::vector<LetterboxInfo> ratio_pad;
  int epoch = 0;
  std::int64_t index = 0;  ///< batch index within the epoch
};

/// The rows of Batch::targets for images of at most `most` boxes: the next power of two, at least
/// 8, so that the shapes a run meets are few (a CUDA graph per shape) and none is empty.
std::int64_t padded_target_rows(std::int64_t most);

/// A deterministic multi-threaded loader. Sample order and every augmentation are functions of
/// (seed, epoch, position in the epoch), so batches are byte-identical for any number of workers,
/// and seek() resumes mid-epoch without decoding skipped samples. Threads only, no processes;
/// the destructor (or stop()) ends them promptly, whatever the queue holds.
class Loader {
 public:
  Loader(const Dataset& dataset, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Positions the loader at batch `batch_index` of `epoch` (0-based); next() returns it.
  void seek(int epoch, std::int64_t batch_index = 0);
  /// The next batch of the current epoch, or nothing at its end (then seek(epoch + 1)) or when
  /// options().token asks to stop while it waits (the batch is then not consumed). Rethrows a
  /// worker's exception as yolotrain::Error naming the file; a retry rebuilds the same batch.
  std::optional<Batch> next();
  /// Batches per epoch: ceil(samples_per_epoch() / batch), the same on every rank.
  std::int64_t batches_per_epoch() const;
  /// Samples this rank reads per epoch: ceil(size / world_size).
  std::int64_t samples_per_epoch() const;
  /// The run's data position in global samples, the unit a checkpoint records so that it
  /// resumes with another world size or batch: `batch_index` batches read by each of the
  /// world_size ranks = batch_index * batch * world_size.
  std::int64_t global_samples(std::int64_t batch_index) const;
  /// The batch to seek() to after `samples` global samples (counted by any world size and
  /// batch): floor(samples / (batch * world_size)), at most batches_per_epoch(). Exact when the
  /// global batch (batch * world_size) is unchanged, else up to one global batch is read again.
  std::int64_t batch_for_global_samples(std::int64_t samples) const;
  /// Ends the worker threads now; next() then throws.
  void stop();
  /// Dataset order of epoch `epoch` (global positions -> record index; the whole order, whatever
  /// the rank: see shard_positions()).
  std::vector<std::size_t> order(int epoch) const;
  /// Whether mosaic is used in `epoch` (close_mosaic).
  bool mosaic_enabled(int epoch) const;
  const LoaderOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Ultralytics' preprocess_batch for images: uint8 [B,3,H,W] to float32 / 255 on `device` (the
/// copy first, so on a GPU the conversion runs there and a quarter of the bytes travel).
at::Tensor preprocess_images(const at::Tensor& img, const at::Device& device);

/// The global positions `rank` of `world_size` reads in an epoch of `size` samples, in order:
/// rank, rank + world_size, ... below ceil(size / world_size) * world_size. Position p reads
/// record order(epoch)[p % size] (the padding wraps around, as DistributedSampler does).
std::vector<std::size_t> shard_positions(std::size_t size, int rank, int world_size);

/// Builds sample `position` of `epoch` alone, as the loader's workers do (for tests and tools):
/// pixels and boxes after the whole pipeline, boxes in pixels of the returned image. `position`
/// is global (see shard_positions); rect shapes are those of a single-process loader.
Labelled make_sample(const Dataset& dataset, const LoaderOptions& options, int epoch, std::size_t position,
                     LetterboxInfo* info = nullptr);

}  // namespace yolotrain::data
