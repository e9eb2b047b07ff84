#include "progress_line.hpp"

#include <cmath>
#include <cstdio>

namespace yolotrain::engine {

std::string progress_header(const std::string& distance_loss) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%11s%11s%11s%11s%11s%11s%11s", "Epoch", "GPU_mem", "box_loss", "cls_loss",
                distance_loss.c_str(), "Instances", "Size");
  return buf;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof(buf), "%02ld:%02ld", s / 60, s % 60);
  return buf;
}

namespace {

// tqdm's bar of width 10: full blocks, then one partial block of eighths, then spaces.
std::string bar(double fraction) {
  static const char* const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const int width = 10;
  const int units = static_cast<int>(std::floor(std::min(1.0, std::max(0.0, fraction)) * width * 8));
  std::string out;
  for (int i = 0; i < units / 8; ++i) out += "█";
  int used = units / 8;
  if (used < width && units % 8) {
    out += eighths[units % 8];
    ++used;
  }
  out.append(static_cast<std::size_t>(width - used), ' ');
  return out;
}

}  // namespace

std::string progress_line(const ProgressFigures& f) {
  char cols[160];
  const std::string ep = std::to_string(f.epoch + 1) + "/" + std::to_string(f.epochs);
  char mem[32];
  std::snprintf(mem, sizeof(mem), "%.3gG", f.gpu_mem_gb);
  std::snprintf(cols, sizeof(cols), "%11s%11s%11.4g%11.4g%11.4g%11.4g%11.4g", ep.c_str(), mem, f.losses[0],
                f.losses[1], f.losses[2], double(f.instances), double(f.size));
  const double fraction = f.batches > 0 ? double(f.batch) / double(f.batches) : 0.0;
  const double rate = f.elapsed_s > 0 ? double(f.timed_batches) / f.elapsed_s : 0.0;
  const double eta = rate > 0 ? double(f.batches - f.batch) / rate : -1.0;
  char tail[128];
  if (rate >= 1.0 || rate == 0.0) {
    std::snprintf(tail, sizeof(tail), "| %lld/%lld [%s<%s, %5.2fit/s]", static_cast<long long>(f.batch),
                  static_cast<long long>(f.batches), format_duration(f.elapsed_s).c_str(),
                  format_duration(eta).c_str(), rate);
  } else {
    std::snprintf(tail, sizeof(tail), "| %lld/%lld [%s<%s, %5.2fs/it]", static_cast<long long>(f.batch),
                  static_cast<long long>(f.batches), format_duration(f.elapsed_s).c_str(),
                  format_duration(eta).c_str(), 1.0 / rate);
  }
  char pct[16];
  std::snprintf(pct, sizeof(pct), "%3d%%|", static_cast<int>(std::floor(fraction * 100)));
  return std::string(cols) + ": " + pct + bar(fraction) + tail;
}

}  // namespace yolotrain::engine
