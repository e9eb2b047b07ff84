// The labels cache file: a header (magic, version, key, payload size and SHA-256) and a payload of
// length-prefixed little-endian records. Binary rather than JSON: 100,000 images read back in a
// fraction of a second (docs/data.md, "Big datasets").
#include "labels_cache.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"

namespace fs = std::filesystem;

namespace yolotrain::data::detail {
namespace {

constexpr char kMagic[8] = {'Y', 'T', 'L', 'A', 'B', 'E', 'L', 'S'};
constexpr std::uint32_t kVersion = 4;  // 3: the polygons of segmentation labels; 4: pose keypoints

class Writer {
 public:
  template <class T>
  void put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

/// Reads what Writer wrote; throws on any read past the end (a cut or damaged file).
class Reader {
 public:
  Reader(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  template <class T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  std::string text() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  bool done() const { return p_ == end_; }
  std::size_t read_so_far(const char* start) const { return static_cast<std::size_t>(p_ - start); }

 private:
  void need(std::size_t n) const {
    if (static_cast<std::size_t>(end_ - p_) < n) throw Error("labels cache: cut short");
  }
  const char* p_;
  const char* end_;
};

void put_result(Writer& w, const FileResult& r) {
  w.put(static_cast<std::uint8_t>(r.ok));
  w.put(r.record.image.string());
  w.put(static_cast<std::int32_t>(r.record.height));
  w.put(static_cast<std::int32_t>(r.record.width));
  w.put(static_cast<std::int32_t>(r.record.orientation));
  w.put(static_cast<std::uint32_t>(r.record.boxes.size()));
  for (const Box& b : r.record.boxes) {
    w.put(static_cast<std::int32_t>(b.cls));
    for (float v : {b.x, b.y, b.w, b.h}) w.put(v);
  }
  w.put(static_cast<std::uint32_t>(r.record.segments.size()));
  for (const auto& polygon : r.record.segments) {
    w.put(static_cast<std::uint32_t>(polygon.size()));
    for (float v : polygon) w.put(v);
  }
  w.put(static_cast<std::uint32_t>(r.record.keypoints.size()));
  for (const auto& points : r.record.keypoints) {
    w.put(static_cast<std::uint32_t>(points.size()));
    for (float v : points) w.put(v);
  }
  w.put(r.problem.file.string());
  w.put(r.problem.reason);
  w.put(static_cast<std::uint32_t>(r.warnings.size()));
  for (const auto& s : r.warnings) w.put(s);
  w.put(static_cast<std::uint64_t>(r.duplicates));
}

FileResult get_result(Reader& r) {
  FileResult f;
  f.ok = r.get<std::uint8_t>() != 0;
  f.record.image = r.text();
  f.record.height = r.get<std::int32_t>();
  f.record.width = r.get<std::int32_t>();
  f.record.orientation = r.get<std::int32_t>();
  f.record.boxes.resize(r.get<std::uint32_t>());
  for (Box& b : f.record.boxes) {
    b.cls = r.get<std::int32_t>();
    b.x = r.get<float>(), b.y = r.get<float>(), b.w = r.get<float>(), b.h = r.get<float>();
  }
  f.record.segments.resize(r.get<std::uint32_t>());
  for (auto& polygon : f.record.segments) {
    polygon.resize(r.get<std::uint32_t>());
    for (float& v : polygon) v = r.get<float>();
  }
  f.record.keypoints.resize(r.get<std::uint32_t>());
  for (auto& points : f.record.keypoints) {
    points.resize(r.get<std::uint32_t>());
    for (float& v : points) v = r.get<float>();
  }
  f.problem.file = r.text();
  f.problem.reason = r.text();
  f.warnings.resize(r.get<std::uint32_t>());
  for (auto& s : f.warnings) s = r.text();
  f.duplicates = static_cast<std::size_t>(r.get<std::uint64_t>());
  return f;
}

}  // namespace

std::optional<std::vector<FileResult>> read_labels_cache(const fs::path& path, const std::string& key) {
  try {
    if (!fs::exists(path)) return std::nullopt;
    const std::string file = lifecycle::read_file(path);
    Reader head(file.data(), file.size());
    char magic[sizeof kMagic];
    for (char& c : magic) c = head.get<char>();
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0 || head.get<std::uint32_t>() != kVersion) return std::nullopt;
    if (head.text() != key) return std::nullopt;
    const std::string digest = head.text();
    const auto count = head.get<std::uint64_t>();
    const std::size_t start = head.read_so_far(file.data());  // the payload follows the header
    if (lifecycle::sha256_hex(std::string_view(file).substr(start)) != digest) return std::nullopt;
    Reader body(file.data() + start, file.size() - start);
    std::vector<FileResult> out;
    out.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) out.push_back(get_result(body));
    if (!body.done()) return std::nullopt;
    return out;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable, cut short or damaged: scan again
  }
}

bool is_labels_cache(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof kMagic) == 0;
}

std::string write_labels_cache(const fs::path& path, const std::string& key, const std::vector<FileResult>& results) {
  Writer body;
  for (const auto& r : results) put_result(body, r);
  Writer file;
  for (char c : kMagic) file.put(c);
  file.put(kVersion);
  file.put(key);
  file.put(lifecycle::sha256_hex(body.bytes()));
  file.put(static_cast<std::uint64_t>(results.size()));
  file.bytes() += body.bytes();
  try {
    lifecycle::atomic_write(path, file.bytes());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace yolotrain::data::detail
