#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace yolotrain::lifecycle {

/// GPU memory as seen by libtorch's caching allocator and, where libnvidia-ml.so.1 loads, NVML.
struct CudaMemory {
  bool cuda = false;  ///< this process uses a CUDA device (it has a context on it)
  int device = -1;                 ///< the current device
  std::int64_t allocated = 0;      ///< bytes held by live tensors
  std::int64_t reserved = 0;       ///< bytes the caching allocator holds from the driver
  std::int64_t total = 0;          ///< the device's memory (cudaDeviceProp::totalGlobalMem)
  std::string name;                ///< the device's name ("NVIDIA H200")
  std::optional<std::int64_t> process_bytes;  ///< NVML: this process's bytes on the device
  std::optional<std::int64_t> device_used;    ///< NVML: bytes used on the device by everyone
};

/// True when this build has CUDA code (the libtorch it was built against has CUDA).
bool built_with_cuda() noexcept;
/// True when a CUDA device can be used now (never throws; false in CPU builds).
bool cuda_usable() noexcept;
/// The current memory figures; all zero/empty without CUDA or while this process has no CUDA
/// context (asking would create one). Never throws.
CudaMemory cuda_memory() noexcept;
/// Synchronises the current device and empties the caching allocator (no-op without CUDA or
/// before this process used the GPU).
/// Returns false if synchronising failed (a sticky CUDA error); never throws.
bool cuda_release_cached() noexcept;
/// Makes CUDA device `index` the calling thread's current one, as Ultralytics' torch.cuda.set_device
/// (RANK): the queries and releases above act on the current device, so a run on cuda:N calls this
/// first (without it, ranks 1+ of a torchrun would release device 0, where they hold nothing).
/// A no-op without CUDA.
void cuda_set_current_device(int index);
/// "allocated 1.0 GiB, reserved 1.0 GiB, process 1.3 GiB" or "no CUDA device: nothing to release".
std::string describe(const CudaMemory& memory);

/// What a CudaGuard did when it ended.
struct CudaGuardReport {
  CudaMemory before;  ///< just before the release
  CudaMemory after;   ///< just after it
  bool synchronized = true;
  std::string message;  ///< one line for a log
};

/// Options of a CudaGuard.
struct CudaGuardOptions {
  /// Receives the report when the guard ends; the default prints report.message on stderr when
  /// the process held GPU memory (and says nothing otherwise).
  std::function<void(const CudaGuardReport&)> on_release;
};

/// RAII around a run that may use the GPU: its destructor — on normal return, on a stop, or
/// while an exception unwinds — synchronises the device, empties the caching allocator and
/// reports the bytes held before and after. It never throws. Without CUDA (or a GPU this process
/// used) it releases nothing and, by default, says nothing.
class CudaGuard {
 public:
  explicit CudaGuard(CudaGuardOptions options = {});
  ~CudaGuard();
  CudaGuard(const CudaGuard&) = delete;
  CudaGuard& operator=(const CudaGuard&) = delete;

  /// The same release as the destructor, now (e.g. when pausing). Never throws.
  CudaGuardReport release() noexcept;
  /// Memory when the guard was created.
  const CudaMemory& at_start() const { return at_start_; }

 private:
  CudaGuardOptions options_;
  CudaMemory at_start_;
};

}  // namespace yolotrain::lifecycle
