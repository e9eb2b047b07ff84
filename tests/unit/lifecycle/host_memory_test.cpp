#include "yolotrain/lifecycle/memory/host_memory.hpp"

#include "catch.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace lc = yolotrain::lifecycle;

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

constexpr std::size_t kBlock = 30u << 20;  // under glibc's largest mmap threshold (32 MiB)

// One "training step" of host memory: three activation-sized blocks written and freed (90 MiB
// freed at once: beyond glibc's default trim threshold, so by default it goes back to the kernel).
void one_step() {
  void* blocks[3];
  for (auto& b : blocks) {
    b = std::malloc(kBlock);
    REQUIRE(b != nullptr);
    std::memset(b, 1, kBlock);
  }
  for (auto* b : blocks) std::free(b);
}

}  // namespace

TEST_CASE("kept host memory is reused without page faults and released on request", "[lifecycle]") {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  SUCCEED("skipped: not glibc's malloc");
#else
  REQUIRE(lc::keep_freed_host_memory());
  one_step();  // the first step faults its pages in
  const long faults_before = minor_faults();
  for (int i = 0; i < 5; ++i) one_step();
  const long faults = minor_faults() - faults_before;
  const long pages_per_step = long(3 * kBlock) / sysconf(_SC_PAGESIZE);
  INFO("minor faults over 5 steps: " << faults << " (one step touches " << pages_per_step << " pages)");
  CHECK(faults < pages_per_step / 4);

  const long kept = resident_bytes();
  CHECK(lc::release_freed_host_memory());
  const long released = kept - resident_bytes();
  INFO("resident before release " << kept / (1 << 20) << " MiB, returned " << released / (1 << 20) << " MiB");
  CHECK(released >= long(2 * kBlock));
#endif
}
