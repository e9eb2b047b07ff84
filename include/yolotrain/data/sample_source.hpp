#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/image.hpp"

namespace yolotrain::data {

/// One sample a program gives: the decoded image (BGR, as data::Image) and its boxes (YOLO
/// format: class id, normalised centre and size).
struct Sample {
  Image image;
  std::vector<Box> boxes;
};

/// Images a program holds in memory, read by index instead of from a dataset folder. The loader
/// asks for sample(i) from its worker threads (it must be thread-safe) whenever it needs image i,
/// once per epoch or more (mosaic borrows neighbours). Exact resume and the deterministic loader
/// rest on one promise: index i is the same sample every time it is asked, in this process and in
/// the one that resumes the run.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  /// How many samples there are.
  virtual std::size_t size() const = 0;
  /// Sample `index` (0 <= index < size()); may throw yolotrain::Error saying what is wrong.
  virtual Sample sample(std::size_t index) const = 0;
};

/// An Image from a program's pixel buffer: `height` rows of `stride` bytes, each `width` pixels
/// of 3 bytes in BGR order (OpenCV's) or RGB (`rgb`).
Image image_from_pixels(const std::uint8_t* data, int width, int height, std::size_t stride, bool rgb);

/// A Dataset over `source` with class `names`, for the Loader and the Trainer as a scanned
/// folder is: every sample is read once, as a scan reads every file, to check its image and boxes
/// (a sample with an empty image, a class outside names or a box outside the image is skipped and
/// named in the report, "memory:<split>/<index>: ..."; coordinates beyond [0, 1] by at most
/// `clip_tolerance` are clipped with a warning) and to know its size. Throws yolotrain::Error when
/// no sample is usable.
Dataset memory_dataset(std::shared_ptr<const SampleSource> source, std::vector<std::string> names,
                       const std::string& split, float clip_tolerance = 0.01f);

}  // namespace yolotrain::data
