#include "safe_exit.hpp"

#include <algorithm>
#include <vector>

namespace yolotrain::engine::detail {
namespace {
constexpr std::size_t kSteps = 32;
}

void SafeExitClock::polled() {
  const auto now = std::chrono::steady_clock::now();
  if (last_poll_ != std::chrono::steady_clock::time_point{}) {
    steps_.push_back(std::chrono::duration<double>(now - last_poll_).count());
    if (steps_.size() > kSteps) steps_.pop_front();
  }
  last_poll_ = now;
}

double SafeExitClock::step_seconds() const {
  if (steps_.empty()) return 0;
  std::vector<double> sorted(steps_.begin(), steps_.end());
  const std::size_t at = (sorted.size() * 9) / 10;
  std::nth_element(sorted.begin(), sorted.begin() + at, sorted.end());
  return sorted[std::min(at, sorted.size() - 1)];
}

}  // namespace yolotrain::engine::detail
