#include "yolotrain/nn/memory_format.hpp"

#include <ATen/ATen.h>

namespace yolotrain::nn {

void set_memory_format(torch::nn::Module& module, c10::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(format));
  }
  for (auto& b : module.buffers()) {
    if (b.dim() == 4) b.set_data(b.data().contiguous(format));
  }
}

c10::MemoryFormat preferred_cpu_memory_format() { return c10::MemoryFormat::ChannelsLast; }

}  // namespace yolotrain::nn
