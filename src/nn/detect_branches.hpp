#pragma once
// What the head's branches are built from, shared by Detect's files (detect.cpp, obb_head.cpp);
// private to src/nn.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <mutex>

#include "yolotrain/nn/conv.hpp"

namespace yolotrain::nn::detail {

/// Conv 3x3, Conv 3x3, Conv2d 1x1: a box, class (YOLOv8), mask, keypoint or angle branch of one level.
torch::nn::Sequential branch(int64_t c_in, int64_t hidden, int64_t c_out);

/// Copies every parameter and buffer of `from` into `to` (the same names).
void copy_tensors(torch::nn::Module& from, torch::nn::Module& to);

// Builds what `build` registers without drawing from the default generator: Ultralytics makes the
// one-to-one branches by copy.deepcopy, which draws no random numbers.
template <class Build>
void without_drawing(Build build) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  at::Tensor state;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());  // not held while building: drawing takes it
    state = gen.get_state();
  }
  build();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace yolotrain::nn::detail
