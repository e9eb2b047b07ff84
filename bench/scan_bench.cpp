// Scan and start-up at scale: a generated dataset of N images (hard links to the coco128 train
// JPEGs under new names, labels generated), the first scan, a second start from the labels cache
// up to the first batch, and the resident memory the dataset index costs. Prints figures; asserts
// nothing. Run: build/bench/scan_bench [N=100000] [DIR=/tmp/yolotrain-scan-bench] [SHARED_DIR]
#include <ATen/ATen.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "yolotrain/data.hpp"

namespace fs = std::filesystem;
namespace yd = yolotrain::data;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Resident memory of this process in bytes (VmRSS), after returning freed memory to the OS.
double resident_bytes() {
  malloc_trim(0);
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  return 0;
}

std::string name(std::size_t i) {
  char b[24];
  std::snprintf(b, sizeof b, "%07zu", i);
  return b;
}

/// Writes DIR/data.yaml with a train split of n images (hard links) and generated labels.
fs::path generate(const fs::path& dir, std::size_t n, const std::vector<fs::path>& sources) {
  const fs::path yaml = dir / "data.yaml", marker = dir / ("complete-" + std::to_string(n));
  if (fs::exists(marker)) return yaml;
  fs::remove_all(dir);
  fs::create_directories(dir / "images/train");
  fs::create_directories(dir / "labels/train");
  yd::Rng rng(1, 2, 3);
  for (std::size_t i = 0; i < n; ++i) {
    fs::create_hard_link(sources[i % sources.size()], dir / "images/train" / (name(i) + ".jpg"));
    std::ofstream label(dir / "labels/train" / (name(i) + ".txt"));
    for (std::uint64_t k = 0, boxes = 1 + rng.below(8); k < boxes; ++k) {
      const double w = 0.05 + 0.3 * rng.uniform(), h = 0.05 + 0.3 * rng.uniform();
      label << rng.below(80) << ' ' << w / 2 + (1 - w) * rng.uniform() << ' ' << h / 2 + (1 - h) * rng.uniform()
            << ' ' << w << ' ' << h << '\n';
    }
  }
  std::ofstream out(yaml);
  out << "path: .\ntrain: images/train\nval: images/train\nnames:\n";
  for (int c = 0; c < 80; ++c) out << "  " << c << ": class" << c << "\n";
  std::ofstream{marker};
  return yaml;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  const fs::path dir = argc > 2 ? fs::path(argv[2]) : fs::path("/tmp/yolotrain-scan-bench");
  const fs::path shared = argc > 3 ? fs::path(argv[3]) : fs::path(YOLOTRAIN_SHARED_DIR);
  const auto sources = yd::list_images({shared / "datasets/coco128/images/train"});

  auto t0 = Clock::now();
  const fs::path yaml = generate(dir, n, sources);
  std::printf("dataset: %zu images (hard links to %zu coco128 JPEGs), labels generated, in %s (%.1f s)\n", n,
              sources.size(), dir.c_str(), seconds_since(t0));
  const yd::DataConfig cfg = yd::load_data_yaml(yaml);
  fs::remove(dir / "labels/train.cache");

  t0 = Clock::now();
  const double rss0 = resident_bytes();
  {
    const yd::Dataset first = yd::load_split(cfg, "train");
    std::printf("first scan (every image verified, labels parsed, cache written): %.2f s, %zu images, %zu boxes\n",
                seconds_since(t0), first.size(), first.report.boxes);
  }
  std::printf("labels cache: %.1f MB\n", fs::file_size(dir / "labels/train.cache") / 1e6);

  const auto images = yd::list_images({dir / "images/train"});
  t0 = Clock::now();
  yd::scan_cache_key(images, 80, yd::ScanOptions{}.clip_tolerance);
  std::printf("of a start: listing and the cache key (a stat of every image and label) %.2f s\n", seconds_since(t0));

  const double rss1 = resident_bytes();
  t0 = Clock::now();
  const yd::Dataset ds = yd::load_split(cfg, "train");
  const double scan_s = seconds_since(t0);
  const double rss2 = resident_bytes();
  yd::LoaderOptions o;
  o.batch = 16, o.imgsz = 640, o.workers = 2;
  yd::Loader loader(ds, o);
  const auto batch = loader.next();
  std::printf("second start: cache read %.2f s (from_cache %d), first batch of 16 at 640 after %.2f s in all\n",
              scan_s, int(ds.report.from_cache), seconds_since(t0));
  std::printf("resident memory of the index: %.0f bytes per image (%.1f MB for %zu; before the scans %.1f MB, "
              "after the first %.1f MB)\n",
              (rss2 - rss1) / ds.size(), (rss2 - rss1) / 1e6, ds.size(), rss0 / 1e6, rss1 / 1e6);
  return batch ? 0 : 1;
}
