#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace yolotrain::lifecycle {

/// Incremental SHA-256 (FIPS 180-4), for checkpoint checksums and weight digests.
class Sha256 {
 public:
  Sha256();
  /// Adds bytes.
  Sha256& update(const void* data, std::size_t size);
  Sha256& update(std::string_view data) { return update(data.data(), data.size()); }
  /// The 32-byte digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> digest();
  /// The digest as 64 lowercase hex characters.
  std::string hex_digest();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

/// SHA-256 of `data` as hex.
std::string sha256_hex(std::string_view data);

}  // namespace yolotrain::lifecycle
