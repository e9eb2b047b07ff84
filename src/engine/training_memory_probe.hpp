#pragma once

// AutoBatch's probe on a CUDA device: a copy of the model trains one forward + backward of empty
// images, as Ultralytics' utils/torch_utils.py profile() does (private to src/engine).

#include <torch/types.h>

#include <cstdint>

#include "mixed_precision.hpp"
#include "yolotrain/engine/autobatch.hpp"
#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::engine::detail {

class TrainingMemoryProbe : public MemoryProbe {
 public:
  TrainingMemoryProbe(nn::DetectionModel model, torch::Device device, std::int64_t imgsz, AmpMode amp)
      : model_(std::move(model)), device_(device), imgsz_(imgsz), amp_(amp) {}
  DeviceMemory memory() override;
  std::optional<double> measure(std::int64_t batch) override;

 private:
  nn::DetectionModel model_;
  torch::Device device_;
  std::int64_t imgsz_;
  AmpMode amp_;
};

}  // namespace yolotrain::engine::detail
