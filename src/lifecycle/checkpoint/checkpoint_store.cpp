#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <utility>
#include <unistd.h>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/sha256.hpp"
#include "yolotrain/lifecycle/control/signal_binding.hpp"

namespace yolotrain::lifecycle {
namespace fs = std::filesystem;
namespace {

// File layout: a fixed 96-byte header, the metadata JSON, then the payload (safetensors).
constexpr char kMagic[8] = {'Y', 'T', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr std::size_t kHeaderBytes = 96;
constexpr const char* kExtension = ".ytckpt";

struct FixedHeader {
  std::uint32_t version = 0;
  std::uint64_t meta_bytes = 0;
  std::uint64_t payload_bytes = 0;
  std::array<std::uint8_t, 32> meta_sha{};
  std::array<std::uint8_t, 32> payload_sha{};
};

template <typename T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

template <typename T>
T get_le(const char* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= T(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string encode_meta(const CheckpointMeta& meta) {
  nlohmann::ordered_json j = {{"format_version", meta.format_version},
                              {"step", meta.step},
                              {"epoch", meta.epoch},
                              {"wall_time", meta.wall_time},
                              {"model", meta.model},
                              {"config", meta.config},
                              {"extra", meta.extra}};
  return j.dump();
}

CheckpointMeta decode_meta(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  CheckpointMeta meta;
  meta.format_version = j.at("format_version").get<int>();
  meta.step = j.at("step").get<std::int64_t>();
  meta.epoch = j.at("epoch").get<std::int64_t>();
  meta.wall_time = j.at("wall_time").get<double>();
  meta.model = j.at("model").get<std::string>();
  meta.config = j.at("config").get<std::string>();
  meta.extra = j.at("extra").get<std::map<std::string, std::string>>();
  return meta;
}

[[noreturn]] void invalid(const fs::path& path, const std::string& why) {
  throw Error("checkpoint " + path.string() + ": " + why);
}

// Checks the fixed header (the first min(size, 96) bytes at `raw`) against the file's size.
FixedHeader parse_header(const char* raw, std::uint64_t size, const fs::path& path) {
  if (size == 0) invalid(path, "file is empty");
  if (size >= sizeof(kMagic) && std::memcmp(raw, kMagic, sizeof(kMagic)) != 0) {
    invalid(path, "not a yolotrain checkpoint (wrong magic bytes)");
  }
  if (size < kHeaderBytes) {
    invalid(path, "truncated: " + std::to_string(size) + " bytes is shorter than the header");
  }
  FixedHeader h;
  h.version = get_le<std::uint32_t>(raw + 8);
  h.meta_bytes = get_le<std::uint64_t>(raw + 16);
  h.payload_bytes = get_le<std::uint64_t>(raw + 24);
  std::memcpy(h.meta_sha.data(), raw + 32, 32);
  std::memcpy(h.payload_sha.data(), raw + 64, 32);
  if (h.version > static_cast<std::uint32_t>(kCheckpointFormatVersion)) {
    invalid(path, "format version " + std::to_string(h.version) +
                      " is newer than this build reads (" +
                      std::to_string(kCheckpointFormatVersion) + "); use a newer yolotrain");
  }
  if (h.meta_bytes > size || h.payload_bytes > size ||
      kHeaderBytes + h.meta_bytes + h.payload_bytes != size) {
    invalid(path, "truncated or padded: header announces " +
                      std::to_string(kHeaderBytes + h.meta_bytes + h.payload_bytes) +
                      " bytes, file has " + std::to_string(size));
  }
  return h;
}

// Reads the fixed header of a file and checks it against the file's size.
FixedHeader read_header(std::ifstream& in, const fs::path& path) {
  if (!in) invalid(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  char raw[kHeaderBytes] = {};
  const auto head = static_cast<std::streamsize>(std::min<std::uint64_t>(size, kHeaderBytes));
  if (size > 0 && !in.read(raw, head)) invalid(path, "read error");
  return parse_header(raw, size, path);
}

std::string read_exact(std::ifstream& in, std::uint64_t n, const fs::path& path) {
  std::string out(n, '\0');
  if (!in.read(out.data(), static_cast<std::streamsize>(n))) invalid(path, "read error");
  return out;
}

CheckpointMeta decode_verified_meta(std::string_view text, const FixedHeader& h, const fs::path& path) {
  if (Sha256().update(text).digest() != h.meta_sha) invalid(path, "metadata checksum mismatch (corrupt)");
  try {
    return decode_meta(std::string(text));
  } catch (const nlohmann::json::exception& e) {
    invalid(path, std::string("metadata is malformed: ") + e.what());
  }
}

CheckpointMeta read_verified_meta(std::ifstream& in, const FixedHeader& h, const fs::path& path) {
  return decode_verified_meta(read_exact(in, h.meta_bytes, path), h, path);
}

std::optional<std::int64_t> rotating_step(const fs::path& p, const std::string& prefix) {
  const std::string name = p.filename().string();
  const std::string head = prefix + "-";
  if (name.size() <= head.size() + std::strlen(kExtension) || name.rfind(head, 0) != 0 ||
      name.substr(name.size() - std::strlen(kExtension)) != kExtension) {
    return std::nullopt;
  }
  const std::string digits = name.substr(head.size(), name.size() - head.size() - std::strlen(kExtension));
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoll(digits);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

NamedTensors host_snapshot(const NamedTensors& live, NamedTensors spare) {
  NamedTensors out;
  out.reserve(live.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    const auto& [name, t] = live[i];
    const at::Tensor src = t.detach();
    if (i < spare.size() && spare[i].first == name && spare[i].second.sizes() == src.sizes() &&
        spare[i].second.scalar_type() == src.scalar_type() && spare[i].second.is_contiguous()) {
      spare[i].second.copy_(src);
      out.emplace_back(name, std::move(spare[i].second));
      continue;
    }
    at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU).pinned_memory(src.is_cuda()));
    host.copy_(src);
    out.emplace_back(name, std::move(host));
  }
  return out;
}

const at::Tensor& Checkpoint::tensor(const std::string& name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return t;
  }
  std::string keys;
  for (std::size_t i = 0; i < tensors.size() && i < 8; ++i) keys += (i ? ", " : "") + tensors[i].first;
  throw Error("checkpoint at step " + std::to_string(meta.step) + " has no tensor '" + name +
              "' (it has: " + keys + (tensors.size() > 8 ? ", ..." : "") + ")");
}

CheckpointStore::CheckpointStore(CheckpointStoreOptions options) : options_(std::move(options)) {
  std::error_code ec;
  if (fs::exists(options_.dir, ec) && !fs::is_directory(options_.dir, ec)) {
    throw Error("checkpoint folder " + options_.dir.string() + " exists but is not a folder; pick another path");
  }
  fs::create_directories(options_.dir, ec);
  if (ec) throw Error("cannot create checkpoint folder " + options_.dir.string() + ": " + ec.message());
  if (options_.keep_last < 1) throw Error("CheckpointStore: keep_last must be >= 1");
  remove_stale_temporaries(options_.dir);
}

CheckpointStore::~CheckpointStore() {
  try {
    wait();
  } catch (const std::exception& e) {
    std::cerr << "yolotrain: checkpoint write failed: " << e.what() << "\n";
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

namespace {

// The file as two parts, header+metadata and payload, so writing needs no concatenated copy.
std::pair<std::string, std::string> encode_parts(const Checkpoint& checkpoint) {
  CheckpointMeta meta = checkpoint.meta;
  meta.format_version = kCheckpointFormatVersion;
  if (meta.wall_time == 0) meta.wall_time = now_seconds();
  const std::string meta_text = encode_meta(meta);
  std::string payload = encode_safetensors(checkpoint.tensors);
  std::string head(kMagic, sizeof(kMagic));
  put_le<std::uint32_t>(head, kCheckpointFormatVersion);
  put_le<std::uint32_t>(head, 0);
  put_le<std::uint64_t>(head, meta_text.size());
  put_le<std::uint64_t>(head, payload.size());
  for (auto b : Sha256().update(meta_text).digest()) head.push_back(static_cast<char>(b));
  for (auto b : Sha256().update(payload).digest()) head.push_back(static_cast<char>(b));
  head += meta_text;
  return {std::move(head), std::move(payload)};
}

}  // namespace

std::string CheckpointStore::encode(const Checkpoint& checkpoint) {
  auto [head, payload] = encode_parts(checkpoint);
  return head + payload;
}

CheckpointMeta CheckpointStore::read_meta(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const FixedHeader h = read_header(in, path);
  return read_verified_meta(in, h, path);
}

Checkpoint CheckpointStore::load(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const FixedHeader h = read_header(in, path);
  Checkpoint ckpt;
  ckpt.meta = read_verified_meta(in, h, path);
  const std::string payload = read_exact(in, h.payload_bytes, path);
  if (Sha256().update(payload).digest() != h.payload_sha) {
    invalid(path, "payload checksum mismatch (corrupt)");
  }
  ckpt.tensors = decode_safetensors(payload, path.string());
  return ckpt;
}

CheckpointMeta CheckpointStore::verify(std::string_view bytes, const std::string& name) {
  const fs::path path(name);
  const FixedHeader h = parse_header(bytes.data(), bytes.size(), path);
  CheckpointMeta meta = decode_verified_meta(bytes.substr(kHeaderBytes, h.meta_bytes), h, path);
  if (Sha256().update(bytes.substr(kHeaderBytes + h.meta_bytes)).digest() != h.payload_sha) {
    invalid(path, "payload checksum mismatch (corrupt)");
  }
  return meta;
}

void CheckpointStore::write(const Checkpoint& checkpoint, const fs::path& target) const {
  const auto [head, payload] = encode_parts(checkpoint);
  atomic_write(target, {head, payload}, options_.write);
}

fs::path CheckpointStore::write_rotating(Checkpoint checkpoint) {
  checkpoint.meta.model = options_.model;
  checkpoint.meta.format_version = kCheckpointFormatVersion;
  if (checkpoint.meta.wall_time == 0) checkpoint.meta.wall_time = now_seconds();
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%012lld", static_cast<long long>(checkpoint.meta.step));
  const fs::path path = options_.dir / (options_.prefix + "-" + digits + kExtension);
  const std::int64_t step = checkpoint.meta.step;
  const auto t0 = std::chrono::steady_clock::now();
  write(checkpoint, path);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_saved_ = {path, std::move(checkpoint.meta)};
    last_write_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  rotate();
  if (auto hook = written_hook()) hook(path, step);
  return path;
}

void CheckpointStore::on_written(WrittenHook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_written_ = std::move(hook);
}

CheckpointStore::WrittenHook CheckpointStore::written_hook() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return on_written_;
}

fs::path CheckpointStore::save(const Checkpoint& checkpoint) {
  wait();
  return write_rotating(checkpoint);
}

fs::path CheckpointStore::save_pinned(const Checkpoint& checkpoint, const std::string& name) {
  rethrow_pending_error();
  Checkpoint named = checkpoint;
  named.meta.model = options_.model;
  const fs::path path = options_.dir / (name + kExtension);
  write(named, path);
  if (auto hook = written_hook()) hook(path, -1);
  return path;
}

void CheckpointStore::save_async(Checkpoint snapshot) {
  std::exception_ptr earlier;  // taken with the queueing: this write's own failure surfaces later
  {
    std::lock_guard<std::mutex> lock(mutex_);
    earlier = std::exchange(pending_error_, nullptr);
    queued_ = std::move(snapshot);  // replaces a queued one that has not started: coalescing
    if (!writer_.joinable()) writer_ = std::thread([this] { writer_loop(); });
  }
  cv_.notify_all();
  if (earlier) std::rethrow_exception(earlier);  // an earlier failed write; this one is still queued
}

void CheckpointStore::writer_loop() {
  block_lifecycle_signals_in_this_thread();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return queued_.has_value() || shutdown_; });
    if (!queued_) return;
    Checkpoint job = std::move(*queued_);
    queued_.reset();
    writing_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      write_rotating(job);
    } catch (const std::exception& e) {
      error = std::current_exception();
      std::lock_guard<std::mutex> g(mutex_);
      last_error_ = e.what();
    }
    lock.lock();
    spare_ = std::move(job.tensors);
    if (error) pending_error_ = error;
    writing_ = false;
    cv_.notify_all();
  }
}

std::optional<fs::path> CheckpointStore::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !queued_ && !writing_; });
  lock.unlock();
  rethrow_pending_error();
  std::lock_guard<std::mutex> guard(mutex_);
  if (last_saved_) return last_saved_->first;
  return std::nullopt;
}

void CheckpointStore::rethrow_pending_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_error_) {
    auto e = pending_error_;
    pending_error_ = nullptr;
    std::rethrow_exception(e);
  }
}

NamedTensors CheckpointStore::take_spare() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(spare_);
}

bool CheckpointStore::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.has_value() || writing_;
}

std::vector<fs::path> CheckpointStore::checkpoints() const {
  std::vector<std::pair<std::int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.dir, ec)) {
    if (auto step = rotating_step(entry.path(), options_.prefix)) found.emplace_back(*step, entry.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::string CheckpointStore::model_mismatch(const CheckpointMeta& meta) const {
  if (options_.model.empty() || meta.model == options_.model) return "";
  return "written for model '" + meta.model + "', this run trains '" + options_.model + "'";
}

void CheckpointStore::rotate() {
  int kept = 0;
  for (const auto& path : checkpoints()) {
    try {
      const CheckpointMeta meta = read_meta(path);
      if (!model_mismatch(meta).empty()) continue;  // not ours: never delete it
    } catch (const Error&) {
      continue;  // unverifiable: leave it for a human to look at
    }
    // POSIX calls, not std::filesystem's removals: PyTorch's wheels export broken copies of those.
    if (++kept > options_.keep_last && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
      throw Error("cannot remove old checkpoint " + path.string() + ": " + std::strerror(errno));
    }
  }
}

LoadResult CheckpointStore::load_latest() const {
  LoadResult result;
  for (const auto& path : checkpoints()) {
    try {
      Checkpoint ckpt = load(path);
      const std::string mismatch = model_mismatch(ckpt.meta);
      if (!mismatch.empty()) invalid(path, mismatch);
      result.checkpoint = std::move(ckpt);
      result.path = path;
      return result;
    } catch (const Error& e) {
      result.skipped.push_back({path, e.what()});
    }
  }
  return result;
}

double CheckpointStore::last_write_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_write_s_;
}

std::optional<std::pair<fs::path, CheckpointMeta>> CheckpointStore::last_saved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_saved_;
}

std::optional<std::string> CheckpointStore::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

}  // namespace yolotrain::lifecycle
