#include "exif.hpp"

#include <cstring>

namespace yolotrain::data::detail {
namespace {

std::uint32_t read(const std::uint8_t* p, int bytes, bool little) {
  std::uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    const int k = little ? bytes - 1 - i : i;
    v = (v << 8) | p[k];
  }
  return v;
}

int orientation_in_tiff(const std::uint8_t* t, std::size_t n) {
  if (n < 8) return 1;
  const bool little = t[0] == 'I' && t[1] == 'I';
  if (!little && !(t[0] == 'M' && t[1] == 'M')) return 1;
  const std::uint32_t ifd = read(t + 4, 4, little);
  if (ifd + 2 > n) return 1;
  const std::uint32_t count = read(t + ifd, 2, little);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t e = ifd + 2 + 12u * i;
    if (e + 12 > n) return 1;
    if (read(t + e, 2, little) == 0x0112) {
      const std::uint32_t v = read(t + e + 8, 2, little);
      return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
    }
  }
  return 1;
}

}  // namespace

int jpeg_exif_orientation(const std::uint8_t* d, std::size_t n) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return 1;
  std::size_t i = 2;
  while (i + 4 <= n) {
    if (d[i] != 0xFF) return 1;
    const std::uint8_t marker = d[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return 1;  // start of scan / end of image
    const std::size_t len = (static_cast<std::size_t>(d[i + 2]) << 8) | d[i + 3];
    if (len < 2 || i + 2 + len > n) return 1;
    if (marker == 0xE1 && len >= 8 && std::memcmp(d + i + 4, "Exif\0\0", 6) == 0)
      return orientation_in_tiff(d + i + 10, len - 8);
    i += 2 + len;
  }
  return 1;
}

}  // namespace yolotrain::data::detail
