#include "training_memory_probe.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <string>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"

namespace yolotrain::engine::detail {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool out_of_memory(const c10::Error& e) {
  return std::string(e.what_without_backtrace()).find("out of memory") != std::string::npos;
}

}  // namespace

DeviceMemory TrainingMemoryProbe::memory() {
  const lifecycle::CudaMemory m = lifecycle::cuda_memory();
  if (!m.cuda || m.total <= 0) throw Error("no CUDA memory figures (the model is not on a CUDA device)");
  return {"CUDA:" + std::to_string(m.device) + " (" + m.name + ")", static_cast<double>(m.total) / kGiB,
          static_cast<double>(m.reserved) / kGiB, static_cast<double>(m.allocated) / kGiB};
}

// Ultralytics' profile(): the model copied to the device in train mode, x = empty(b, 3, imgsz,
// imgsz) with requires_grad, y = m(x), sum of the outputs' sums backward, memory_reserved / 1e9;
// an out-of-memory error gives None; torch.cuda.empty_cache() after each size.
std::optional<double> TrainingMemoryProbe::measure(std::int64_t batch) {
  std::optional<double> gb;
  try {
    auto copy = std::dynamic_pointer_cast<nn::DetectionModelImpl>(model_->clone(device_));
    copy->train();
    const at::Tensor x =
        at::empty({batch, copy->options.ch(), imgsz_, imgsz_}, at::TensorOptions(device_)).requires_grad_();
    at::Tensor total;
    {
      AutocastScope autocast(amp_, device_);
      for (const auto& level : copy->forward(x)) total = total.defined() ? total + level.sum() : level.sum();
    }
    total.backward();
    gb = static_cast<double>(lifecycle::cuda_memory().reserved) / 1e9;
  } catch (const c10::Error& e) {
    if (!out_of_memory(e)) throw;
  }
  lifecycle::cuda_release_cached();
  return gb;
}

}  // namespace yolotrain::engine::detail
