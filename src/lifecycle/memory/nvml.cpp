#include "nvml.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

namespace yolotrain::lifecycle::nvml {
namespace {

// The few NVML declarations used, as nvml.h gives them (the toolkit here ships no nvml.h).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlProcessInfo_t {  // the _v2/_v3 layout
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;

struct Library {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*) = nullptr;
  bool ready = false;

  Library() {
    handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    init = reinterpret_cast<decltype(init)>(dlsym(handle, "nvmlInit_v2"));
    by_pci = reinterpret_cast<decltype(by_pci)>(dlsym(handle, "nvmlDeviceGetHandleByPciBusId_v2"));
    memory = reinterpret_cast<decltype(memory)>(dlsym(handle, "nvmlDeviceGetMemoryInfo"));
    processes = reinterpret_cast<decltype(processes)>(
        dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v3"));
    if (processes == nullptr) {
      processes = reinterpret_cast<decltype(processes)>(
          dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v2"));
    }
    ready = init && by_pci && memory && init() == kSuccess;
  }
};

Library& library() {
  static Library lib;
  return lib;
}

}  // namespace

bool available() noexcept {
  try {
    return library().ready;
  } catch (...) {
    return false;
  }
}

DeviceMemory memory_for_pci_bus(const std::string& pci_bus_id) noexcept {
  DeviceMemory out;
  if (!available()) return out;
  Library& lib = library();
  nvmlDevice_t device = nullptr;
  if (lib.by_pci(pci_bus_id.c_str(), &device) != kSuccess) return out;
  nvmlMemory_t mem{};
  if (lib.memory(device, &mem) == kSuccess) out.device_used = static_cast<std::int64_t>(mem.used);
  if (lib.processes == nullptr) return out;
  try {
    std::vector<nvmlProcessInfo_t> infos(64);
    unsigned int count = static_cast<unsigned int>(infos.size());
    nvmlReturn_t rc = lib.processes(device, &count, infos.data());
    if (rc == kInsufficientSize) {
      infos.resize(count + 16);
      count = static_cast<unsigned int>(infos.size());
      rc = lib.processes(device, &count, infos.data());
    }
    if (rc != kSuccess) return out;
    for (unsigned int i = 0; i < count; ++i) {
      if (infos[i].pid == static_cast<unsigned int>(getpid())) {
        out.process_bytes = static_cast<std::int64_t>(infos[i].usedGpuMemory);
      }
    }
  } catch (...) {
  }
  return out;
}

}  // namespace yolotrain::lifecycle::nvml
