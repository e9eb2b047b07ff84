#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace yolotrain::data {

/// An 8-bit, 3-channel image in BGR order (OpenCV's and Ultralytics' convention), rows packed.
struct Image {
  int height = 0;
  int width = 0;
  std::vector<std::uint8_t> pixels;  ///< height * width * 3 bytes

  Image() = default;
  /// A height x width image filled with `value`.
  Image(int h, int w, std::uint8_t value = 0)
      : height(h), width(w), pixels(static_cast<std::size_t>(h) * w * 3, value) {}
  bool empty() const { return pixels.empty(); }
  std::uint8_t* pixel(int y, int x) { return pixels.data() + (static_cast<std::size_t>(y) * width + x) * 3; }
  const std::uint8_t* pixel(int y, int x) const {
    return pixels.data() + (static_cast<std::size_t>(y) * width + x) * 3;
  }
};

/// What a header (and the EXIF block) says about an image without decoding its pixels.
struct ImageInfo {
  int height = 0;       ///< after EXIF orientation
  int width = 0;        ///< after EXIF orientation
  int orientation = 1;  ///< EXIF orientation tag (1 = none)
};

/// The largest image the decoders accept, in pixels (width x height as the file's header declares
/// them). A larger one is refused from its header, before any pixel memory is allocated: a 60 KB
/// PNG of one flat colour can declare 40000 x 40000 pixels, 4.8 GB decoded (a "decompression
/// bomb"). The default, 178,956,970, is PIL's: Ultralytics reads images with PIL, which raises
/// DecompressionBombError above twice its Image.MAX_IMAGE_PIXELS (89,478,485). The environment
/// variable YOLOTRAIN_MAX_IMAGE_PIXELS sets it when the process starts (0: no limit).
std::uint64_t max_image_pixels();
/// Sets the limit of max_image_pixels() for the whole process (0: no limit).
void set_max_image_pixels(std::uint64_t pixels);

/// Decodes a JPEG (libjpeg-turbo) or PNG (libpng) file to BGR, applying the EXIF orientation as
/// OpenCV's imread does. When `min_long_side` > 0 and the JPEG's long side is at least twice it,
/// the decoder downscales in the DCT (1/2, 1/4 or 1/8) to the smallest size whose long side is still
/// >= `min_long_side`; the caller resizes the rest of the way. `fast_dct` picks libjpeg-turbo's
/// faster, slightly less exact IDCT. Throws yolotrain::Error naming the file on a corrupt file,
/// an unsupported format (supported: JPEG, PNG) or an image above max_image_pixels().
Image decode_image(const std::filesystem::path& path, int min_long_side = 0);

/// decode_image() of bytes already in memory; `name` is used in error messages.
Image decode_image_bytes(const std::vector<std::uint8_t>& bytes, const std::string& name,
                         int min_long_side = 0);

/// Checks that the file fully decodes (a 1/8 DCT-scaled pass for JPEG, with libjpeg-turbo's
/// warnings, e.g. a truncated file, treated as errors) and returns its oriented size. Throws
/// yolotrain::Error with the reason otherwise (an image above max_image_pixels() among them,
/// refused from its header).
ImageInfo verify_image(const std::filesystem::path& path);

/// Encodes `image` as a baseline JPEG (quality 0-100) with libjpeg-turbo.
std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality = 95);

/// Encodes `image` as an 8-bit RGB PNG with libpng.
std::vector<std::uint8_t> encode_png(const Image& image);

/// Writes `bytes` to `path` (not atomically; for generated datasets and tests).
void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes);

}  // namespace yolotrain::data
