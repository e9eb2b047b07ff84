// A Dataset over a program's in-memory samples (SampleSource): checked as a scan checks files.
#include <cstring>

#include "box_check.hpp"
#include "yolotrain/data/sample_source.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::data {

Image image_from_pixels(const std::uint8_t* data, int width, int height, std::size_t stride, bool rgb) {
  if (!data || width <= 0 || height <= 0 || stride < static_cast<std::size_t>(width) * 3) {
    throw Error("image_from_pixels: need data, width and height > 0 and stride >= 3 * width (got " +
                std::to_string(width) + "x" + std::to_string(height) + ", stride " + std::to_string(stride) + ")");
  }
  Image image(height, width);
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* row = data + static_cast<std::size_t>(y) * stride;
    std::uint8_t* out = image.pixel(y, 0);
    if (!rgb) {
      std::memcpy(out, row, static_cast<std::size_t>(width) * 3);
      continue;
    }
    for (int x = 0; x < width; ++x) {
      out[3 * x] = row[3 * x + 2];
      out[3 * x + 1] = row[3 * x + 1];
      out[3 * x + 2] = row[3 * x];
    }
  }
  return image;
}

namespace {

// The sample's record, or the reason it cannot be used.
std::string check_sample(const Sample& s, int nc, float tol, ImageRecord& record, int& clipped) {
  if (s.image.empty() || s.image.height <= 0 || s.image.width <= 0 ||
      s.image.pixels.size() != static_cast<std::size_t>(s.image.height) * s.image.width * 3) {
    return "empty image, or its pixels are not height * width * 3 bytes";
  }
  record.height = s.image.height;
  record.width = s.image.width;
  for (std::size_t i = 0; i < s.boxes.size(); ++i) {
    const Box& b = s.boxes[i];
    const double v[5] = {double(b.cls), b.x, b.y, b.w, b.h};
    Box checked;
    bool was_clipped = false;
    const std::string why = detail::check_box(v, nc, tol, checked, was_clipped);
    if (!why.empty()) return "box " + std::to_string(i) + ": " + why;
    clipped += was_clipped;
    record.boxes.push_back(checked);
  }
  return "";
}

}  // namespace

Dataset memory_dataset(std::shared_ptr<const SampleSource> source, std::vector<std::string> names,
                       const std::string& split, float clip_tolerance) {
  if (!source) throw Error("memory_dataset: no SampleSource given for split '" + split + "'");
  if (names.empty()) throw Error("memory_dataset: no class names given for split '" + split + "'");
  Dataset ds;
  ds.split = split;
  ds.names = std::move(names);
  ds.source = source;
  ScanReport& rep = ds.report;
  rep.boxes_per_class.assign(ds.names.size(), 0);
  for (std::size_t i = 0; i < source->size(); ++i) {
    const std::string name = "memory:" + split + "/" + std::to_string(i);
    ImageRecord record;
    record.image = name;
    record.sample = static_cast<std::int64_t>(i);
    int clipped = 0;
    std::string why;
    try {
      why = check_sample(source->sample(i), ds.nc(), clip_tolerance, record, clipped);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      rep.corrupt.push_back({name, why});
      continue;
    }
    if (clipped)
      rep.warnings.push_back(name + ": " + std::to_string(clipped) + " box(es) slightly outside [0, 1] clipped");
    detail::add_usable(ds, std::move(record));
  }
  if (ds.records.empty()) {
    throw Error("memory_dataset: split '" + split + "' has no usable sample of " + std::to_string(source->size()) +
                (rep.corrupt.empty() ? "" : " (first: " + rep.corrupt.front().file.string() + ": " +
                                                rep.corrupt.front().reason + ")"));
  }
  return ds;
}

}  // namespace yolotrain::data
