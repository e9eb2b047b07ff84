#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace yolotrain::lifecycle {

/// Incremental SHA-256, for checkpoint checksums and weight digests. OpenSSL's libcrypto does
/// the work (with the CPU's SHA instructions where it has them).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  /// Adds bytes.
  Sha256& update(const void* data, std::size_t size);
  Sha256& update(std::string_view data) { return update(data.data(), data.size()); }
  /// The 32-byte digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> digest();
  /// The digest as 64 lowercase hex characters.
  std::string hex_digest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

/// SHA-256 of `data` as hex.
std::string sha256_hex(std::string_view data);

}  // namespace yolotrain::lifecycle
