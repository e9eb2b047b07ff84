#pragma once

#include <c10/core/MemoryFormat.h>
#include <torch/nn/module.h>

namespace yolotrain::nn {

/// Converts every 4-d parameter and buffer of `module` to `format` in place (for example
/// at::MemoryFormat::ChannelsLast); inputs should then use the same format.
void set_memory_format(torch::nn::Module& module, c10::MemoryFormat format);

/// The memory format that trains fastest on the CPU (measured with bench/nn_bench, see
/// docs/nn.md); the default for CPU training.
c10::MemoryFormat preferred_cpu_memory_format();

}  // namespace yolotrain::nn
