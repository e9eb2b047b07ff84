#pragma once
// Reads the EXIF orientation tag of a JPEG (APP1 "Exif" segment, IFD0 tag 0x0112).
#include <cstddef>
#include <cstdint>

namespace yolotrain::data::detail {

/// The orientation (1..8) from a JPEG's EXIF block; 1 when absent or unreadable.
int jpeg_exif_orientation(const std::uint8_t* data, std::size_t size);

}  // namespace yolotrain::data::detail
