#pragma once
// TensorBoard's event file: TFRecord framing (length, masked CRC32C of the length, the data,
// masked CRC32C of the data) around Event protobuf messages.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace yolotrain::engine::detail {

/// CRC-32C (Castagnoli), as TFRecord uses it.
std::uint32_t crc32c(std::string_view data);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t masked_crc32c(std::string_view data);
/// One TFRecord: the framing around `data`.
std::string tfrecord(std::string_view data);
/// The records of a TFRecord file's bytes, up to the first torn or damaged one (a process killed
/// while appending leaves at most one).
std::vector<std::string> read_tfrecords(std::string_view bytes);

}  // namespace yolotrain::engine::detail
