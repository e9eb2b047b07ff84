#include "pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "yolotrain/error.hpp"

namespace yolotrain::data::detail {
namespace {

constexpr std::uint64_t kOrderStream = ~0ull;

/// close_mosaic: the last N epochs train without mosaic and mixup.
bool closed(const LoaderOptions& opt, int epoch) {
  return opt.close_mosaic > 0 && epoch >= opt.epochs - opt.close_mosaic;
}

/// Decodes record `i`, resized to long side imgsz (boxes in its pixels); cached when asked.
Labelled load(const PipelineContext& ctx, std::size_t i) {
  const ImageRecord& rec = ctx.dataset->records[i];
  const LoaderOptions& opt = *ctx.options;
  Labelled s;
  std::shared_ptr<const Image> cached = ctx.cache ? ctx.cache->get(i) : nullptr;
  if (cached) {
    s.image = *cached;
  } else {
    s.image = decode_image(rec.image, opt.dct_scaling ? opt.imgsz : 0);
    resize_long_side(s, opt.imgsz);
    if (ctx.cache) ctx.cache->put(i, std::make_shared<const Image>(s.image));
  }
  const float w = static_cast<float>(s.image.width), h = static_cast<float>(s.image.height);
  for (const Box& b : rec.boxes)
    s.boxes.push_back({b.cls, (b.x - b.w / 2) * w, (b.y - b.h / 2) * h, (b.x + b.w / 2) * w, (b.y + b.h / 2) * h});
  return s;
}

/// Mosaic (or letterbox) + random perspective: Ultralytics' pre-transform of the training pipeline.
Labelled geometric(const PipelineContext& ctx, std::size_t index, bool mosaic, Rng& rng) {
  const LoaderOptions& opt = *ctx.options;
  const int s = opt.imgsz;
  if (mosaic && rng.uniform() < opt.hyp.mosaic) {
    std::vector<Labelled> four{load(ctx, index)};
    for (int k = 0; k < 3; ++k) four.push_back(load(ctx, rng.below(ctx.dataset->size())));
    Labelled m = mosaic4(four, s, rng);
    random_perspective(m, opt.hyp, rng, -s / 2);
    return m;
  }
  Labelled one = load(ctx, index);
  letterbox(one, s, s, false, true, opt.stride);
  random_perspective(one, opt.hyp, rng, 0);
  return one;
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

Labelled build_sample(const PipelineContext& ctx, int epoch, std::size_t position, std::size_t index,
                      std::pair<int, int> shape, LetterboxInfo& info) {
  const LoaderOptions& opt = *ctx.options;
  const ImageRecord& rec = ctx.dataset->records[index];
  if (!opt.augment) {
    Labelled s = load(ctx, index);
    const double g_h = double(s.image.height) / rec.height, g_w = double(s.image.width) / rec.width;
    const LetterboxInfo lb = letterbox(s, shape.first, shape.second, false, false, opt.stride);
    info = {g_h * lb.ratio_h, g_w * lb.ratio_w, lb.pad_x, lb.pad_y};
    return s;
  }
  Rng rng(opt.seed, static_cast<std::uint64_t>(epoch), position);
  const bool mosaic = !closed(opt, epoch) && opt.hyp.mosaic > 0;
  Labelled s = geometric(ctx, index, mosaic, rng);
  if (!closed(opt, epoch) && opt.hyp.mixup > 0 && rng.uniform() < opt.hyp.mixup) {
    const Labelled other = geometric(ctx, rng.below(ctx.dataset->size()), mosaic, rng);
    mixup(s, other, rng);
  }
  random_hsv(s.image, opt.hyp, rng);
  random_flip(s, opt.hyp, rng);
  info = {double(s.image.height) / rec.height, double(s.image.width) / rec.width, 0, 0};
  return s;
}

}  // namespace yolotrain::data::detail
