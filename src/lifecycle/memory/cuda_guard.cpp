#include "yolotrain/lifecycle/memory/cuda_guard.hpp"

#include <cstdio>
#include <iostream>

#include "nvml.hpp"

#if YOLOTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace yolotrain::lifecycle {
namespace {

std::string bytes_text(std::int64_t bytes) {
  char buf[64];
  if (bytes >= (1LL << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / double(1LL << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / double(1LL << 20));
  }
  return buf;
}

}  // namespace

#if YOLOTRAIN_WITH_CUDA

bool built_with_cuda() noexcept { return true; }

bool cuda_usable() noexcept {
  try {
    return c10::cuda::device_count() > 0;
  } catch (...) {
    return false;
  }
}

namespace {
// True once this process has a CUDA context on the current device. Every query below is made
// only then: asking a process that never used the GPU would create a context (hundreds of MB).
bool cuda_in_use(int* device) noexcept {
  try {
    if (!cuda_usable()) return false;
    *device = c10::cuda::current_device();
    return at::detail::getCUDAHooks().hasPrimaryContext(static_cast<c10::DeviceIndex>(*device));
  } catch (...) {
    return false;
  }
}
}  // namespace

CudaMemory cuda_memory() noexcept {
  CudaMemory m;
  try {
    if (!cuda_in_use(&m.device)) return m;
    m.cuda = true;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(m.device);
    m.allocated = stats.allocated_bytes[0].current;  // index 0: the aggregate over pools
    m.reserved = stats.reserved_bytes[0].current;
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(m.device);
    m.total = static_cast<std::int64_t>(prop->totalGlobalMem);
    m.name = prop->name;
    char bus[32];
    std::snprintf(bus, sizeof(bus), "%08x:%02x:%02x.0", prop->pciDomainID, prop->pciBusID,
                  prop->pciDeviceID);
    const auto nv = nvml::memory_for_pci_bus(bus);
    m.process_bytes = nv.process_bytes;
    m.device_used = nv.device_used;
  } catch (...) {
  }
  return m;
}

bool cuda_release_cached() noexcept {
  int device = -1;
  if (!cuda_in_use(&device)) return true;
  bool synced = true;
  try {
    c10::cuda::device_synchronize();
  } catch (...) {
    synced = false;
  }
  try {
    c10::cuda::CUDACachingAllocator::emptyCache();
  } catch (...) {
    synced = false;
  }
  return synced;
}

void cuda_set_current_device(int index) { c10::cuda::set_device(static_cast<c10::DeviceIndex>(index)); }

#else

void cuda_set_current_device(int) {}
bool built_with_cuda() noexcept { return false; }
bool cuda_usable() noexcept { return false; }
CudaMemory cuda_memory() noexcept { return {}; }
bool cuda_release_cached() noexcept { return true; }

#endif

std::string describe(const CudaMemory& m) {
  if (!m.cuda) {
    if (!built_with_cuda()) return "built without CUDA: nothing to release";
    return cuda_usable() ? "CUDA not used by this process: nothing to release"
                         : "no CUDA device: nothing to release";
  }
  std::string out = "cuda:" + std::to_string(m.device) + " allocated " + bytes_text(m.allocated) +
                    ", reserved " + bytes_text(m.reserved);
  if (m.process_bytes) out += ", process " + bytes_text(*m.process_bytes) + " (NVML)";
  if (m.device_used) out += ", device used " + bytes_text(*m.device_used) + " (NVML)";
  return out;
}

CudaGuard::CudaGuard(CudaGuardOptions options) : options_(std::move(options)) {
  at_start_ = cuda_memory();
}

CudaGuardReport CudaGuard::release() noexcept {
  CudaGuardReport report;
  try {
    report.before = cuda_memory();
    report.synchronized = cuda_release_cached();
    report.after = cuda_memory();
    if (!report.before.cuda) {
      report.message = "CudaGuard: " + describe(report.before);
    } else {
      report.message = "CudaGuard: released GPU memory: before [" + describe(report.before) +
                       "], after [" + describe(report.after) + "]" +
                       (report.synchronized ? "" : " (device synchronisation failed)");
    }
  } catch (...) {
  }
  return report;
}

CudaGuard::~CudaGuard() {
  const CudaGuardReport report = release();
  try {
    if (options_.on_release) {
      options_.on_release(report);
    } else if (report.before.cuda) {  // nothing held, nothing said
      std::cerr << report.message << "\n";
    }
  } catch (...) {
  }
}

}  // namespace yolotrain::lifecycle
