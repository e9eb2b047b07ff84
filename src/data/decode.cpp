// Decoding (libjpeg-turbo's TurboJPEG API with DCT scaling, libpng) and encoding for tests/tools.
#include <png.h>
#include <turbojpeg.h>

#include <opencv2/core.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "exif.hpp"
#include "opencv_view.hpp"
#include "yolotrain/data/image.hpp"
#include "yolotrain/error.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

constexpr std::uint64_t kDefaultMaxImagePixels = 178'956'970;  // PIL: 2 * Image.MAX_IMAGE_PIXELS

std::uint64_t initial_max_image_pixels() {
  const char* env = std::getenv("YOLOTRAIN_MAX_IMAGE_PIXELS");
  if (env == nullptr || *env == '\0') return kDefaultMaxImagePixels;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || env[0] == '-') {
    std::fprintf(stderr, "WARNING YOLOTRAIN_MAX_IMAGE_PIXELS='%s' is not a number of pixels; using %llu\n", env,
                 static_cast<unsigned long long>(kDefaultMaxImagePixels));
    return kDefaultMaxImagePixels;
  }
  return v;
}

std::atomic<std::uint64_t>& max_pixels() {
  static std::atomic<std::uint64_t> limit{initial_max_image_pixels()};
  return limit;
}

/// Why a declared size is refused (above max_image_pixels()), or "" when it is not: checked
/// before anything of that size is allocated.
std::string oversize(std::uint64_t width, std::uint64_t height) {
  const std::uint64_t limit = max_pixels().load(std::memory_order_relaxed);
  if (limit == 0 || width * height <= limit) return "";
  return "image size " + std::to_string(width) + "x" + std::to_string(height) + " (" +
         std::to_string(width * height) + " pixels) exceeds the limit of " + std::to_string(limit) +
         " pixels, could be a decompression bomb; if the image is genuine, set "
         "YOLOTRAIN_MAX_IMAGE_PIXELS to a larger number (0: no limit)";
}

tjhandle decompressor() {
  thread_local TjHandle handle(tjInitDecompress());
  if (!handle) throw Error("libjpeg-turbo: cannot create a decompressor");
  return handle.get();
}

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(path.string() + ": cannot open the image file");
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error(path.string() + ": cannot read the image file (not a regular file?)");
  Bytes b(static_cast<std::size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size())))
    throw Error(path.string() + ": cannot read the image file");
  return b;
}

bool is_jpeg(const Bytes& b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }
bool is_png(const Bytes& b) { return b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0; }

[[noreturn]] void unsupported(const std::string& name, const Bytes& b) {
  if (b.empty()) throw Error(name + ": empty file (0 bytes)");
  throw Error(name + ": unsupported image format (supported: JPEG, PNG); convert it or remove it from the dataset");
}

/// The scaling factor 1/d (d = 8, 4, 2) giving the smallest long side still >= min_long_side.
tjscalingfactor pick_scale(int w, int h, int min_long_side) {
  tjscalingfactor best{1, 1};
  if (min_long_side <= 0) return best;
  for (int d : {2, 4, 8}) {
    const tjscalingfactor f{1, d};
    if (std::max(TJSCALED(w, f), TJSCALED(h, f)) >= min_long_side) best = f;
  }
  return best;
}

/// OpenCV's imread orientation handling (ExifTransform).
Image orient(Image image, int orientation) {
  if (orientation <= 1 || orientation > 8) return image;
  cv::Mat src = detail::view(image), dst;
  switch (orientation) {
    case 2: cv::flip(src, dst, 1); break;
    case 3: cv::flip(src, dst, -1); break;
    case 4: cv::flip(src, dst, 0); break;
    case 5: cv::transpose(src, dst); break;
    case 6: cv::transpose(src, dst); cv::flip(dst, dst, 1); break;
    case 7: cv::transpose(src, dst); cv::flip(dst, dst, -1); break;
    case 8: cv::transpose(src, dst); cv::flip(dst, dst, 0); break;
  }
  return detail::from_mat(dst);
}

Image decode_jpeg(const Bytes& b, const std::string& name, int min_long_side, bool strict) {
  tjhandle tj = decompressor();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, b.data(), b.size(), &w, &h, &subsamp, &colorspace) != 0)
    throw Error(name + ": corrupt JPEG header (" + tjGetErrorStr2(tj) + ")");
  if (const std::string why = oversize(w, h); !why.empty()) throw Error(name + ": " + why);
  const tjscalingfactor f = pick_scale(w, h, min_long_side);
  Image out(TJSCALED(h, f), TJSCALED(w, f));
  const int flags = strict ? TJFLAG_STOPONWARNING : 0;
  if (tjDecompress2(tj, b.data(), b.size(), out.pixels.data(), out.width, 0, out.height, TJPF_BGR, flags) != 0) {
    if (strict || tjGetErrorCode(tj) != TJERR_WARNING)
      throw Error(name + ": corrupt JPEG (" + tjGetErrorStr2(tj) + ")");
  }
  return orient(std::move(out), detail::jpeg_exif_orientation(b.data(), b.size()));
}

Image decode_png(const Bytes& b, const std::string& name) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, b.data(), b.size()))
    throw Error(name + ": corrupt PNG (" + png.message + ")");
  if (const std::string why = oversize(png.width, png.height); !why.empty()) {
    png_image_free(&png);
    throw Error(name + ": " + why);
  }
  png.format = PNG_FORMAT_BGR;
  Image out(static_cast<int>(png.height), static_cast<int>(png.width));
  if (!png_image_finish_read(&png, nullptr, out.pixels.data(), 0, nullptr)) {
    const std::string msg = png.message;
    png_image_free(&png);
    throw Error(name + ": corrupt PNG (" + msg + ")");
  }
  return out;
}

}  // namespace

std::uint64_t max_image_pixels() { return max_pixels().load(std::memory_order_relaxed); }

void set_max_image_pixels(std::uint64_t pixels) { max_pixels().store(pixels, std::memory_order_relaxed); }

Image decode_image_bytes(const Bytes& bytes, const std::string& name, int min_long_side) {
  if (is_jpeg(bytes)) return decode_jpeg(bytes, name, min_long_side, false);
  if (is_png(bytes)) return decode_png(bytes, name);
  unsupported(name, bytes);
}

Image decode_image(const fs::path& path, int min_long_side) {
  return decode_image_bytes(read_bytes(path), path.string(), min_long_side);
}

ImageInfo verify_image(const fs::path& path) {
  const Bytes b = read_bytes(path);
  const std::string name = path.string();
  ImageInfo info;
  if (is_jpeg(b)) {
    tjhandle tj = decompressor();
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    if (tjDecompressHeader3(tj, b.data(), b.size(), &w, &h, &subsamp, &colorspace) != 0)
      throw Error("corrupt JPEG header (" + std::string(tjGetErrorStr2(tj)) + ")");
    if (const std::string why = oversize(w, h); !why.empty()) throw Error(why);
    const tjscalingfactor f{1, 8};
    std::vector<std::uint8_t> tmp(static_cast<std::size_t>(TJSCALED(w, f)) * TJSCALED(h, f) * 3);
    if (tjDecompress2(tj, b.data(), b.size(), tmp.data(), TJSCALED(w, f), 0, TJSCALED(h, f), TJPF_BGR,
                      TJFLAG_STOPONWARNING) != 0)
      throw Error("corrupt JPEG (" + std::string(tjGetErrorStr2(tj)) + ")");
    info.orientation = detail::jpeg_exif_orientation(b.data(), b.size());
    const bool swap = info.orientation >= 5;
    info.width = swap ? h : w;
    info.height = swap ? w : h;
  } else if (is_png(b)) {
    try {
      const Image img = decode_png(b, name);
      info.width = img.width;
      info.height = img.height;
    } catch (const Error& e) {
      throw Error(std::string(e.what()).substr(name.size() + 2));
    }
  } else if (b.empty()) {
    throw Error("empty file (0 bytes)");
  } else {
    throw Error("unsupported image format (supported: JPEG, PNG)");
  }
  if (info.width < 10 || info.height < 10)
    throw Error("image size " + std::to_string(info.width) + "x" + std::to_string(info.height) + " <10 pixels");
  return info;
}

std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality) {
  TjHandle tj(tjInitCompress());
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj.get(), image.pixels.data(), image.width, 0, image.height, TJPF_BGR, &buf, &size, TJSAMP_420,
                  quality, 0) != 0)
    throw Error(std::string("libjpeg-turbo: cannot encode a JPEG: ") + tjGetErrorStr2(tj.get()));
  Bytes out(buf, buf + size);
  tjFree(buf);
  return out;
}

std::vector<std::uint8_t> encode_png(const Image& image) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_BGR;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr))
    throw Error(std::string("libpng: cannot encode a PNG: ") + png.message);
  Bytes out(size);
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), 0, nullptr))
    throw Error(std::string("libpng: cannot encode a PNG: ") + png.message);
  out.resize(size);
  return out;
}

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(path.string() + ": cannot write");
}

}  // namespace yolotrain::data
