#pragma once
// "Decompression bombs" for tests: small, well-formed image files whose headers declare far more
// pixels than they hold (a real one is a flat colour that compresses 1000:1; these carry a 16x16
// image's data, which changes nothing for a decoder that must refuse them from the header).
// Decoded blindly, 40000 x 40000 BGR pixels would take 4.8 GB.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "yolotrain/data/image.hpp"

namespace yolotrain::test {

namespace detail {

inline std::uint32_t crc32(const std::uint8_t* p, std::size_t n) {  // PNG's CRC (ISO 3309)
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

inline void put_be(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * (bytes - 1 - i)));
}

}  // namespace detail

/// A PNG whose IHDR declares width x height (CRC correct), its data a 16x16 image's.
inline void write_png_bomb(const std::filesystem::path& path, std::uint32_t width, std::uint32_t height) {
  std::vector<std::uint8_t> b = data::encode_png(data::Image(16, 16, 90));
  // signature (8), IHDR length (4), "IHDR" (4), width (4), height (4), ..., CRC after 13 data bytes
  detail::put_be(b, 16, width, 4);
  detail::put_be(b, 20, height, 4);
  detail::put_be(b, 29, detail::crc32(b.data() + 12, 17), 4);
  data::write_bytes(path, b);
}

/// A baseline JPEG whose SOF0 declares width x height (at most 65535 each), its data a 16x16 image's.
inline void write_jpeg_bomb(const std::filesystem::path& path, std::uint16_t width, std::uint16_t height) {
  std::vector<std::uint8_t> b = data::encode_jpeg(data::Image(16, 16, 90), 90);
  for (std::size_t i = 2; i + 9 < b.size(); ++i) {
    if (b[i] == 0xFF && b[i + 1] == 0xC0) {  // SOF0: length (2), precision (1), height (2), width (2)
      detail::put_be(b, i + 5, height, 2);
      detail::put_be(b, i + 7, width, 2);
      data::write_bytes(path, b);
      return;
    }
  }
  throw std::runtime_error("write_jpeg_bomb: no SOF0 marker in the encoded JPEG");
}

}  // namespace yolotrain::test
