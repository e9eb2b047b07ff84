#include "fault_injection.hpp"

#include <mutex>

namespace yolotrain::engine::testing {
namespace {

struct Fault {
  std::int64_t step = -1;
  int times = 0;
};

std::mutex mutex;
Fault nonfinite, oom;

bool take(Fault& f, std::int64_t step) {
  std::lock_guard<std::mutex> lock(mutex);
  if (f.times <= 0 || f.step != step) return false;
  --f.times;
  return true;
}

}  // namespace

void inject_nonfinite_loss(std::int64_t step, int times) {
  std::lock_guard<std::mutex> lock(mutex);
  nonfinite = {step, times};
}
void inject_out_of_memory(std::int64_t step, int times) {
  std::lock_guard<std::mutex> lock(mutex);
  oom = {step, times};
}
void clear_faults() {
  std::lock_guard<std::mutex> lock(mutex);
  nonfinite = oom = {};
}
bool nonfinite_loss_due(std::int64_t step) { return take(nonfinite, step); }
bool out_of_memory_due(std::int64_t step) { return take(oom, step); }

}  // namespace yolotrain::engine::testing
