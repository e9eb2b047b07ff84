#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace yolotrain::lifecycle {

/// Tensors with names, in a fixed order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// Encodes tensors in the safetensors layout (u64 little-endian header length, a JSON header
/// with dtype/shape/data_offsets and optional "__metadata__", then the raw little-endian data),
/// in the given order. Tensors are copied to the CPU and made contiguous as needed.
/// Supported dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata = {});

/// Decodes a safetensors buffer into CPU tensors, ordered by their data offsets (the order they
/// were written in). `source` names the file in error messages. Malformed input (bad lengths,
/// overlapping or out-of-range offsets, an unknown dtype, a shape that does not match the byte
/// count) throws yolotrain::Error; nothing is ever read out of bounds.
NamedTensors decode_safetensors(std::string_view bytes, const std::string& source,
                                std::map<std::string, std::string>* metadata = nullptr);

}  // namespace yolotrain::lifecycle
