#include "yolotrain/lifecycle/files/sha256.hpp"

#include <openssl/evp.h>

#include "yolotrain/error.hpp"

namespace yolotrain::lifecycle {

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (context_->ctx == nullptr || EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256: OpenSSL could not initialise a digest context");
  }
}

Sha256::~Sha256() = default;

Sha256& Sha256::update(const void* data, std::size_t size) {
  if (size > 0 && EVP_DigestUpdate(context_->ctx, data, size) != 1) throw Error("SHA-256: update failed");
  return *this;
}

std::array<std::uint8_t, 32> Sha256::digest() {
  std::array<std::uint8_t, 32> out{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(context_->ctx, out.data(), &n) != 1 || n != out.size()) {
    throw Error("SHA-256: final failed");
  }
  return out;
}

std::string Sha256::hex_digest() {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::uint8_t byte : digest()) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) { return Sha256().update(data).hex_digest(); }

}  // namespace yolotrain::lifecycle
