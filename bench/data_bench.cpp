// Data pipeline figures: loader images/s on coco128 (default train augmentation) and decode time per
// image with and without DCT scaling on bccd. Prints figures; asserts nothing.
// Run: build/bench/data_bench [SHARED_DIR] [WORKERS ...]  (default workers: 1 2)
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "yolotrain/data.hpp"

namespace fs = std::filesystem;
namespace yd = yolotrain::data;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Images per second over three epochs (after a warm-up epoch, so cache=ram is measured filled);
/// mask_ratio > 0: a segmentation loader (masks with every batch).
double loader_images_per_s(const yd::Dataset& ds, int imgsz, int workers, bool cache_ram, int mask_ratio = 0) {
  yd::LoaderOptions o;
  o.batch = 16, o.imgsz = imgsz, o.workers = workers, o.cache_ram = cache_ram, o.mask_ratio = mask_ratio;
  yd::Loader loader(ds, o);
  while (loader.next()) {
  }
  const auto t0 = Clock::now();
  std::size_t images = 0;
  for (int epoch = 1; epoch <= 3; ++epoch) {  // three epochs: less of the start and end of one in the figure
    loader.seek(epoch);
    while (auto b = loader.next()) images += static_cast<std::size_t>(b->img.size(0));
  }
  return images / seconds_since(t0);
}

/// Milliseconds per decode over `images`, DCT-scaled towards `target` (0: full size).
double decode_ms(const std::vector<fs::path>& images, int target, bool resize) {
  const auto t0 = Clock::now();
  for (const auto& p : images) {
    yd::Labelled s{yd::decode_image(p, target), {}};
    if (resize && target > 0) yd::resize_long_side(s, target);
  }
  return 1000 * seconds_since(t0) / images.size();
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path shared = argc > 1 ? fs::path(argv[1]) : fs::path(YOLOTRAIN_SHARED_DIR);
  std::vector<int> worker_counts;
  for (int i = 2; i < argc; ++i) worker_counts.push_back(std::atoi(argv[i]));
  if (worker_counts.empty()) worker_counts = {1, 2};
  yd::ScanOptions so;
  so.use_cache = false;
  const auto coco = yd::load_split(yd::load_data_yaml(shared / "datasets/coco128/data.yaml"), "train", so);
  std::printf("loader, coco128 train (%zu images), batch 16, default train augmentation (mosaic 1.0, HSV, fliplr)\n",
              coco.size());
  std::printf("%6s %8s %10s %10s\n", "imgsz", "workers", "cache", "images/s");
  for (int imgsz : {320, 640})
    for (int workers : worker_counts)
      for (bool ram : {false, true})
        std::printf("%6d %8d %10s %10.1f\n", imgsz, workers, ram ? "ram" : "none",
                    loader_images_per_s(coco, imgsz, workers, ram));

  // coco128 is smaller than the mosaic window (8 * batch = 128 positions), so the loader ends up
  // holding all of it; its records 4 times over (412, each decoded anew) show a larger set.
  yd::Dataset coco4 = coco;
  for (int r = 1; r < 4; ++r) coco4.records.insert(coco4.records.end(), coco.records.begin(), coco.records.end());
  std::printf("\nloader, coco128 train records 4 times (%zu), more than the 128-position mosaic window\n",
              coco4.size());
  std::printf("%6s %8s %10s\n", "imgsz", "workers", "images/s");
  for (int imgsz : {320, 640})
    for (int workers : worker_counts)
      std::printf("%6d %8d %10.1f\n", imgsz, workers, loader_images_per_s(coco4, imgsz, workers, false));

  // Segmentation: the same 103 images with polygon labels. Boxes only (coco128), outlines carried
  // through the augmentations (coco128-seg, a detection loader), and masks built (mask_ratio 4),
  // alternated twice so that drift shows.
  const auto seg = yd::load_split(yd::load_data_yaml(shared / "datasets/coco128-seg/data.yaml"), "train", so);
  std::printf("\nloader, coco128 boxes vs coco128-seg polygons, batch 16, default train augmentation, images/s\n");
  std::printf("%6s %8s %12s %12s %12s\n", "imgsz", "workers", "boxes", "outlines", "masks");
  for (int round = 0; round < 2; ++round)
    for (int imgsz : {320, 640})
      for (int workers : worker_counts)
        std::printf("%6d %8d %12.1f %12.1f %12.1f\n", imgsz, workers, loader_images_per_s(coco, imgsz, workers, false),
                    loader_images_per_s(seg, imgsz, workers, false),
                    loader_images_per_s(seg, imgsz, workers, false, 4));

  const auto bccd = yd::list_images({shared / "datasets/bccd/images/train", shared / "datasets/bccd/images/val",
                                     shared / "datasets/bccd/images/test"});
  decode_ms(bccd, 0, false);  // warm the page cache
  std::printf("\ndecode, bccd (%zu JPEGs, 640x480), ms per image, one thread\n", bccd.size());
  std::printf("%-44s %8.2f\n", "full decode", decode_ms(bccd, 0, false));
  for (int target : {320, 160}) {
    std::printf("full decode + resize to %-20d %8.2f\n", target, [&] {
      const auto t0 = Clock::now();
      for (const auto& p : bccd) {
        yd::Labelled s{yd::decode_image(p, 0), {}};
        yd::resize_long_side(s, target);
      }
      return 1000 * seconds_since(t0) / bccd.size();
    }());
    std::printf("DCT-scaled decode (1/%d) + resize to %-7d %8.2f\n", 640 / target, target,
                decode_ms(bccd, target, true));
  }
  return 0;
}
