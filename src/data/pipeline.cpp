#include "pipeline.hpp"
#include "yolotrain/data/sample_source.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "augment_into.hpp"
#include "yolotrain/data/classify_transforms.hpp"
#include "yolotrain/data/segments.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::data::detail {
namespace {

constexpr std::uint64_t kOrderStream = ~0ull;
/// Ultralytics' segment_resamples for detection and segmentation datasets, and for OBB's.
constexpr int kSegmentPoints = 1000, kOutlinePoints = 100;

/// update_labels_info's resample count of an image's outlines: kSegmentPoints (kOutlinePoints with
/// LoaderOptions::obb), or one more than the longest outline's points when that is more.
int resample_points(const LoaderOptions& opt, const ImageRecord& rec) {
  std::size_t longest = 0;
  for (const auto& s : rec.segments) longest = std::max(longest, s.size() / 2);
  const int n = opt.obb ? kOutlinePoints : kSegmentPoints;
  return static_cast<std::size_t>(n) < longest ? static_cast<int>(longest) + 1 : n;
}

/// The batch of all ranks together (batch * world_size).
std::size_t global_batch(const LoaderOptions& opt) {
  return static_cast<std::size_t>(opt.batch) * static_cast<std::size_t>(std::max(1, opt.world_size));
}

/// close_mosaic: the last N epochs train without mosaic and mixup.
bool closed(const LoaderOptions& opt, int epoch) {
  return opt.close_mosaic > 0 && epoch >= opt.epochs - opt.close_mosaic;
}

/// A loaded image: decoded and resized to long side imgsz, owned or shared with a cache.
struct Loaded {
  Image owned;
  std::shared_ptr<const Image> shared;
  std::vector<PixelBox> boxes;  ///< in its pixels
  const Image& image() const { return shared ? *shared : owned; }
  /// As a Labelled the caller may change (a copy when the pixels are shared).
  Labelled take() { return {shared ? *shared : std::move(owned), std::move(boxes)}; }
};

Image decode_resized(const PipelineContext& ctx, std::size_t record) {
  const LoaderOptions& opt = *ctx.options;
  const ImageRecord& rec = ctx.dataset->records[record];
  Labelled s{rec.sample >= 0 ? ctx.dataset->source->sample(static_cast<std::size_t>(rec.sample)).image
                             : decode_image(rec.image, opt.dct_scaling ? opt.imgsz : 0),
             {}};
  resize_long_side(s, opt.imgsz);
  return std::move(s.image);
}

/// A classification sample (LoaderOptions::classify): the whole image, decoded (kept whole in the RAM
/// cache with cache=ram, as Ultralytics' ClassificationDataset keeps it), then classify_augment() or
/// classify_centre_crop() to imgsz square.
void build_classify_sample(const PipelineContext& ctx, int epoch, std::size_t position, std::size_t record,
                           SampleBuffers& buffers, LetterboxInfo& info) {
  const LoaderOptions& opt = *ctx.options;
  const ImageRecord& rec = ctx.dataset->records[record];
  const auto decode = [&] {
    return rec.sample >= 0 ? ctx.dataset->source->sample(static_cast<std::size_t>(rec.sample)).image
                           : decode_image(rec.image);
  };
  std::shared_ptr<const Image> image;
  if (ctx.cache && !(image = ctx.cache->get(record))) {
    ctx.cache->put(record, image = std::make_shared<const Image>(decode()));
  }
  if (!image) image = std::make_shared<const Image>(decode());
  Rng rng(opt.seed, static_cast<std::uint64_t>(epoch), position);
  buffers.sample = {opt.augment ? classify_augment(*image, opt.imgsz, opt.hyp, rng)
                                : classify_centre_crop(*image, opt.imgsz),
                    {}};
  info = {double(opt.imgsz) / image->height, double(opt.imgsz) / image->width, 0, 0};
}

/// Loads `record`: from the RAM cache when there is one, else from the recent images under `key`
/// (the record's epoch position) when it has one, else decoded here.
Loaded load(const PipelineContext& ctx, std::size_t record, std::optional<RecentImages::Key> key) {
  Loaded l;
  if (ctx.cache) {
    if (!(l.shared = ctx.cache->get(record)))
      ctx.cache->put(record, l.shared = std::make_shared<const Image>(decode_resized(ctx, record)));
  } else if (ctx.recent && key) {
    if (!(l.shared = ctx.recent->get(*key)))
      ctx.recent->put(*key, l.shared = std::make_shared<const Image>(decode_resized(ctx, record)));
  } else {
    l.owned = decode_resized(ctx, record);
  }
  const float w = static_cast<float>(l.image().width), h = static_cast<float>(l.image().height);
  const ImageRecord& rec = ctx.dataset->records[record];
  const int points = resample_points(*ctx.options, rec);
  for (size_t k = 0; k < rec.boxes.size(); ++k) {
    const Box& b = rec.boxes[k];
    l.boxes.push_back(
        {b.cls, (b.x - b.w / 2) * w, (b.y - b.h / 2) * h, (b.x + b.w / 2) * w, (b.y + b.h / 2) * h, {}, {}});
    if (k < rec.segments.size()) {  // update_labels_info: 1000 (OBB: 100) points, then denormalize (float32)
      std::vector<float> outline = resample_segment(rec.segments[k], points);
      for (size_t i = 0; i < outline.size(); i += 2) outline[i] *= w, outline[i + 1] *= h;
      l.boxes.back().segment = std::move(outline);
    }
    if (k < rec.keypoints.size()) {  // denormalize (float32), visibility kept
      std::vector<float>& points = l.boxes.back().keypoints = rec.keypoints[k];
      for (size_t i = 0; i < points.size(); i += 3) points[i] *= w, points[i + 1] *= h;
    }
  }
  return l;
}

/// Mosaic (or letterbox) + random perspective of `main` into `buffers.sample`: Ultralytics'
/// pre-transform of the training pipeline. Mosaic partners are the records at random positions of
/// the window of `order` that ends at `position` (Ultralytics' buffer of recently loaded images),
/// or any records (LoaderOptions::partners_from_all).
// Ultralytics' pre_transform: Mosaic (with probability mosaic), CopyPaste (`paste`: its p, 0 when
// off), RandomPerspective (which letterboxes an image that is not a mosaic first).
void geometric(const PipelineContext& ctx, int epoch, const std::vector<std::size_t>& order, std::size_t position,
               Loaded main, bool mosaic, double paste, Rng& rng, SampleBuffers& buffers) {
  const LoaderOptions& opt = *ctx.options;
  const int s = opt.imgsz;
  if (mosaic && rng.uniform() < opt.hyp.mosaic) {
    const std::size_t n = order.size(), w = mosaic_window(opt, n), p = position % n;
    const std::size_t first = p + 1 >= w ? p + 1 - w : 0;
    std::vector<Loaded> four;
    four.push_back(std::move(main));
    for (int k = 0; k < 3; ++k) {
      if (opt.partners_from_all) {  // random.randint(0, len(dataset) - 1): in the RAM cache
        four.push_back(load(ctx, rng.below(ctx.dataset->records.size()), std::nullopt));
        continue;
      }
      const std::size_t q = first + rng.below(w);
      four.push_back(load(ctx, order[q], RecentImages::Key{epoch, q}));
    }
    const auto centre = mosaic_centre(s, rng);
    mosaic_canvas(buffers.canvas, s);
    TileRect tiles[4];
    for (int i = 0; i < 4; ++i) tiles[i] = mosaic_place(buffers.canvas, four[i].image(), four[i].boxes, i, centre, s);
    mosaic_fill_rest(buffers.canvas, tiles);
    if (!opt.hyp.copy_paste_mixup) copy_paste(buffers.canvas, paste);
    random_perspective_into(buffers.canvas, buffers.sample, opt.hyp, rng, -s / 2);
    return;
  }
  Labelled one = main.take();
  if (!opt.hyp.copy_paste_mixup) copy_paste(one, paste);
  letterbox(one, s, s, false, true, opt.stride);
  random_perspective_into(one, buffers.sample, opt.hyp, rng, 0);
}

// Ultralytics' CopyPaste in mode "mixup", appended to the pre_transform: with probability `paste`
// (when the sample has outlines), instances pasted from a random image of the dataset put through
// mosaic and random_perspective itself.
void paste_from_another(const PipelineContext& ctx, int epoch, const std::vector<std::size_t>& order,
                        std::size_t position, bool mosaic, double paste, Rng& rng, Labelled& s) {
  const bool outlines = has_outlines(s.boxes);
  if (!ctx.options->hyp.copy_paste_mixup || paste <= 0 || !outlines || rng.uniform() > paste) return;
  SampleBuffers other;
  geometric(ctx, epoch, order, position, load(ctx, rng.below(order.size()), std::nullopt), mosaic, 0.0, rng, other);
  copy_paste(s, paste, &other.sample);
}

}  // namespace

bool mosaic_enabled(const LoaderOptions& opt, int epoch) {
  return opt.augment && opt.hyp.mosaic > 0 && !closed(opt, epoch);
}

std::vector<std::size_t> epoch_order(const Dataset& ds, const LoaderOptions& opt, int epoch) {
  std::vector<std::size_t> order(ds.size());
  std::iota(order.begin(), order.end(), 0);
  if (opt.rect) {
    auto ar = [&](std::size_t i) { return double(ds.records[i].height) / ds.records[i].width; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ar(a) < ar(b); });
  } else if (opt.shuffle) {
    Rng rng(opt.seed, static_cast<std::uint64_t>(epoch), kOrderStream);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }
  return order;
}

std::vector<std::pair<int, int>> rect_batch_shapes(const Dataset& ds, const LoaderOptions& opt,
                                                   const std::vector<std::size_t>& order) {
  std::vector<std::pair<int, int>> shapes;
  for (std::size_t start = 0; start < order.size(); start += opt.batch) {
    double lo = 1e300, hi = 0;
    for (std::size_t p = start; p < std::min(order.size(), start + opt.batch); ++p) {
      const double ar = double(ds.records[order[p]].height) / ds.records[order[p]].width;
      lo = std::min(lo, ar), hi = std::max(hi, ar);
    }
    double sh = 1, sw = 1;
    if (hi < 1) sh = hi;
    else if (lo > 1) sw = 1 / lo;
    auto side = [&](double f) {
      return static_cast<int>(std::ceil(f * opt.imgsz / opt.stride + opt.pad)) * opt.stride;
    };
    shapes.emplace_back(side(sh), side(sw));
  }
  return shapes;
}

std::size_t mosaic_window(const LoaderOptions& opt, std::size_t n) {
  return std::max<std::size_t>(1, std::min({n, 8 * global_batch(opt), std::size_t{1000}}));
}

std::size_t recent_images_capacity(const LoaderOptions& opt, std::size_t n) {
  const std::size_t ahead = (static_cast<std::size_t>(std::max(0, opt.prefetch_batches)) + 1) * global_batch(opt);
  return std::min(n, mosaic_window(opt, n) + ahead);
}

std::shared_ptr<const Image> RecentImages::get(Key key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = images_.find(key);
  return it == images_.end() ? nullptr : it->second;
}

void RecentImages::put(Key key, std::shared_ptr<const Image> image) {
  std::lock_guard<std::mutex> lock(mutex_);
  images_.emplace(key, std::move(image));
  while (images_.size() > capacity_) images_.erase(images_.begin());
}

void build_sample(const PipelineContext& ctx, int epoch, std::size_t position, const std::vector<std::size_t>& order,
                  std::pair<int, int> shape, SampleBuffers& buffers, LetterboxInfo& info) {
  const LoaderOptions& opt = *ctx.options;
  const std::size_t n = order.size(), index = order[position % n];
  if (opt.classify) return build_classify_sample(ctx, epoch, position, index, buffers, info);
  const ImageRecord& rec = ctx.dataset->records[index];
  std::optional<RecentImages::Key> key;  // images are reused only as mosaic partners
  if (mosaic_enabled(opt, epoch)) key = RecentImages::Key{epoch, position % n};
  Loaded main = load(ctx, index, key);
  if (!opt.augment) {
    Labelled s = main.take();
    const double g_h = double(s.image.height) / rec.height, g_w = double(s.image.width) / rec.width;
    const LetterboxInfo lb = letterbox(s, shape.first, shape.second, false, false, opt.stride);
    info = {g_h * lb.ratio_h, g_w * lb.ratio_w, lb.pad_x, lb.pad_y};
    buffers.sample = std::move(s);
    return;
  }
  Rng rng(opt.seed, static_cast<std::uint64_t>(epoch), position);
  const bool mosaic = !closed(opt, epoch) && opt.hyp.mosaic > 0;
  const double paste = closed(opt, epoch) ? 0.0 : opt.hyp.copy_paste;  // close_mosaic turns it off too
  Labelled& s = buffers.sample;
  geometric(ctx, epoch, order, position, std::move(main), mosaic, paste, rng, buffers);
  paste_from_another(ctx, epoch, order, position, mosaic, paste, rng, s);
  // MixUp's and CutMix's partner: any image of the dataset through the same pre-transform.
  const auto another = [&] {
    SampleBuffers other;
    geometric(ctx, epoch, order, position, load(ctx, rng.below(n), std::nullopt), mosaic, paste, rng, other);
    paste_from_another(ctx, epoch, order, position, mosaic, paste, rng, other.sample);
    return other;
  };
  if (!closed(opt, epoch) && opt.hyp.mixup > 0 && rng.uniform() < opt.hyp.mixup) mixup(s, another().sample, rng);
  if (!closed(opt, epoch) && !opt.rect && opt.hyp.cutmix > 0 && rng.uniform() < opt.hyp.cutmix) {
    cutmix(s, another().sample, rng);
  }
  random_hsv(s.image, opt.hyp, rng);
  random_flip(s, opt.hyp, rng);
  info = {double(s.image.height) / rec.height, double(s.image.width) / rec.width, 0, 0};
}

}  // namespace yolotrain::data::detail
