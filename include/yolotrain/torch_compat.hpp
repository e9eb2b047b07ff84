#pragma once
// What differs between the libtorch versions yolotrain builds against — Debian 12's 1.13.1,
// Debian 13's 2.6 and pytorch.org's 2.x (CPU or CUDA) — each in one named place, so the rest of
// the code is written once.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <variant>
#include <vector>

#if TORCH_VERSION_MAJOR < 2
#include <c10/util/variant.h>
#endif

/// True when the libtorch being compiled against is at least MAJOR.MINOR.
#define YOLOTRAIN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace c10d {
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace yolotrain::torch_compat {

// torch::nn's option variants (a convolution's padding, its padding mode): c10::variant up to 1.13,
// std::variant since 2.0.
#if YOLOTRAIN_TORCH_AT_LEAST(2, 0)
using std::get;
using std::get_if;
using std::holds_alternative;
#else
using c10::get;
using c10::get_if;
using c10::holds_alternative;
#endif

// The type a Gloo or NCCL process group is held as: ProcessGroupGloo/NCCL derive from
// c10d::ProcessGroup up to 1.13 and from c10d::Backend since 2.0 (same collectives either way).
#if YOLOTRAIN_TORCH_AT_LEAST(2, 0)
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

// Autocast's state per device: libtorch 2.4 replaced the per-backend calls (set_enabled,
// set_cpu_enabled, get_autocast_gpu_dtype, ...) with ones taking the device type, and deprecated
// the old ones.
#if YOLOTRAIN_TORCH_AT_LEAST(2, 4)
inline bool autocast_enabled(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
inline void set_autocast_enabled(bool cuda, bool on) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
}
inline at::ScalarType autocast_dtype(bool cuda) {
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
}
inline void set_autocast_dtype(bool cuda, at::ScalarType t) {
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, t);
}
#else
inline bool autocast_enabled(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
inline void set_autocast_enabled(bool cuda, bool on) {
  if (cuda)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
}
inline at::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
inline void set_autocast_dtype(bool cuda, at::ScalarType t) {
  if (cuda)
    at::autocast::set_autocast_gpu_dtype(t);
  else
    at::autocast::set_autocast_cpu_dtype(t);
}
#endif

// Every tensor of `tensors` multiplied in place by the 0-dim tensor `factor`, without reading it on
// the host: one multi-tensor kernel since 2.1 (_foreach_mul_.Tensor); before, the list overload
// with `factor` repeated (one operator; its loop of per-tensor kernels runs inside it).
inline void foreach_mul_(std::vector<at::Tensor>& tensors, const at::Tensor& factor) {
  if (tensors.empty()) return;
#if YOLOTRAIN_TORCH_AT_LEAST(2, 1)
  at::_foreach_mul_(tensors, factor);
#else
  at::_foreach_mul_(tensors, std::vector<at::Tensor>(tensors.size(), factor));
#endif
}

}  // namespace yolotrain::torch_compat
