#include "yolotrain/engine/autobatch.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <utility>

namespace yolotrain::engine {
namespace {

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c, d);
  return buf;
}

// numpy.polyfit(x, y, 1): least squares.
void fit_line(const std::vector<double>& x, const std::vector<double>& y, double& slope, double& intercept) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  intercept = (sy - slope * sx) / n;
}

// `default_batch`, with what was printed so far and the reason.
AutoBatchChoice fallback(std::vector<std::string> lines, const std::string& reason, std::int64_t default_batch) {
  AutoBatchChoice c;
  c.batch = default_batch;
  c.fallback = true;
  c.lines = std::move(lines);
  c.lines.push_back(reason);
  return c;
}

}  // namespace

AutoBatchChoice choose_batch(const DeviceMemory& memory, const std::vector<std::int64_t>& sizes,
                             const std::vector<std::optional<double>>& gb, double fraction,
                             std::int64_t default_batch) {
  AutoBatchChoice c;
  c.sizes = sizes;
  c.gb = gb;
  // Ultralytics: y = the measurements that succeeded, fitted against the first len(y) sizes.
  std::vector<double> x, y;
  for (const auto& g : gb) {
    if (g) y.push_back(*g);
  }
  for (size_t i = 0; i < y.size(); ++i) x.push_back(static_cast<double>(sizes[i]));
  if (y.size() < 2) {
    AutoBatchChoice too_few = fallback({}, "AutoBatch: WARNING " + std::to_string(y.size()) +
                                               " batch size(s) ran without running out of memory, too few to fit; "
                                               "using default batch-size " + std::to_string(default_batch) + ".",
                                       default_batch);
    too_few.sizes = sizes;
    too_few.gb = gb;
    return too_few;
  }
  fit_line(x, y, c.slope, c.intercept);
  const double b = (memory.free() * fraction - c.intercept) / c.slope;
  c.batch = std::isfinite(b) && std::abs(b) < 1e15 ? static_cast<std::int64_t>(b) : 0;  // Python's int(): toward zero
  for (size_t i = 0; i < gb.size(); ++i) {
    if (gb[i]) continue;
    if (c.batch >= sizes[i]) c.batch = sizes[i == 0 ? 0 : i - 1];
    break;
  }
  if (c.batch < 1 || c.batch > 1024) {
    c.batch = default_batch;
    c.fallback = true;
    c.lines.push_back("AutoBatch: WARNING CUDA anomaly detected (fitted " + format("%.4g", b) +
                      " images), using default batch-size " + std::to_string(default_batch) + ".");
  }
  c.used_fraction = (c.slope * static_cast<double>(c.batch) + c.intercept + memory.reserved + memory.allocated) /
                    memory.total;
  c.lines.push_back("AutoBatch: Using batch-size " + std::to_string(c.batch) + " for " + memory.name + " " +
                    format("%.2fG/%.2fG (%.0f%%)", memory.total * c.used_fraction, memory.total,
                           c.used_fraction * 100));
  return c;
}

AutoBatchChoice autobatch(MemoryProbe* probe, std::int64_t imgsz, double fraction, std::int64_t default_batch) {
  std::vector<std::string> lines{"AutoBatch: Computing optimal batch size for imgsz=" + std::to_string(imgsz) +
                                 format(" at %.1f%% CUDA memory utilization.", fraction * 100)};
  if (probe == nullptr) {
    return fallback(lines, "AutoBatch: WARNING intended for CUDA devices, using default batch-size " +
                               std::to_string(default_batch), default_batch);
  }
  try {
    const DeviceMemory memory = probe->memory();
    lines.push_back("AutoBatch: " + memory.name + " " +
                    format("%.2fG total, %.2fG reserved, %.2fG allocated, %.2fG free", memory.total, memory.reserved,
                           memory.allocated, memory.free()));
    std::vector<std::int64_t> sizes{1, 2, 4, 8, 16};
    if (memory.total >= 16) sizes.insert(sizes.end(), {32, 64});
    std::vector<std::optional<double>> gb;
    for (std::int64_t b : sizes) gb.push_back(probe->measure(b));
    AutoBatchChoice c = choose_batch(memory, sizes, gb, fraction, default_batch);
    c.lines.insert(c.lines.begin(), lines.begin(), lines.end());
    return c;
  } catch (const std::exception& e) {
    return fallback(lines, std::string("AutoBatch: WARNING error detected: ") + e.what() +
                               ", using default batch-size " + std::to_string(default_batch) + ".", default_batch);
  }
}

}  // namespace yolotrain::engine
