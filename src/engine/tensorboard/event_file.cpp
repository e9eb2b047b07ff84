// CRC-32C by hand: no Debian bookworm library offers it to C++ (libcrc32c is newer), and it is
// twenty lines; checked against the standard test vector and read back by a Python reader that
// uses python3-crc32c (tests).
#include "event_file.hpp"

#include <array>
#include <cstring>

namespace yolotrain::engine::detail {
namespace {

std::array<std::uint32_t, 256> crc32c_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected Castagnoli
    table[i] = c;
  }
  return table;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_le(const char* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  static const auto table = crc32c_table();
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string out, length;
  for (int i = 0; i < 8; ++i) length.push_back(static_cast<char>((std::uint64_t(data.size()) >> (8 * i)) & 0xff));
  out += length;
  put_u32(out, masked_crc32c(length));
  out += data;
  put_u32(out, masked_crc32c(data));
  return out;
}

std::vector<std::string> read_tfrecords(std::string_view bytes) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (bytes.size() - at >= 12) {
    const std::string_view length = bytes.substr(at, 8);
    if (get_le(bytes.data() + at + 8, 4) != masked_crc32c(length)) break;
    const std::uint64_t n = get_le(length.data(), 8);
    if (n > bytes.size() - at - 16) break;
    const std::string_view data = bytes.substr(at + 12, n);
    if (get_le(bytes.data() + at + 12 + n, 4) != masked_crc32c(data)) break;
    out.emplace_back(data);
    at += 16 + n;
  }
  return out;
}

}  // namespace yolotrain::engine::detail
