#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "yolotrain/io/pickle.hpp"

namespace yolotrain::io {

/// Reads a torch.save file (the zip container PyTorch writes since 1.6) without Python and
/// without running anything: the `data.pkl` inside it goes through read_pickle(), its storages
/// (`data/<key>` records) become CPU tensors of their dtype (Half, Float, Double, BFloat16, Long,
/// Int, Short, Char, Byte, Bool storages), and `torch._utils._rebuild_tensor_v2` /
/// `_rebuild_parameter` become Tensor values (offset, sizes and strides checked against the
/// storage). Every other class stays a named Object. Throws yolotrain::Error naming the file for
/// a file that is not a zip (a legacy pre-1.6 torch.save file is named as such), a missing
/// record, a big-endian archive, a storage that is too short, or a pickle read_pickle() refuses.
PickleRef read_torch_archive(const std::filesystem::path& path);

/// read_torch_archive() of a file's bytes already in memory; `name` is used in messages.
PickleRef read_torch_archive_bytes(const std::vector<std::uint8_t>& bytes, const std::string& name);

}  // namespace yolotrain::io
