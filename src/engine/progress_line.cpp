#include "progress_line.hpp"

#include <cmath>
#include <cstdio>

namespace yolotrain::engine {

namespace {

std::string column(const char* format, const std::string& text) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, text.c_str());
  return buf;
}

std::string column(double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%11.4g", value);
  return buf;
}

}  // namespace

std::string progress_header(const std::vector<std::string>& terms) {
  std::string line = column("%11s", "Epoch") + column("%11s", "GPU_mem");
  for (const auto& term : terms) line += column("%11s", term);
  return line + column("%11s", "Instances") + column("%11s", "Size");
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
  char mem[32];
  std::snprintf(mem, sizeof(mem), "%.3gG", f.gpu_mem_gb);
  std::string cols = column("%11s", std::to_string(f.epoch + 1) + "/" + std::to_string(f.epochs)) + column("%11s", mem);
  for (double loss : f.losses) cols += column(loss);
  cols += column(double(f.instances)) + column(double(f.size));
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
  return cols + ": " + pct + bar(fraction) + tail;
}

}  // namespace yolotrain::engine
