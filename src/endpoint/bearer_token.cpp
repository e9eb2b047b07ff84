#include "yolotrain/endpoint/bearer_token.hpp"

#include <openssl/crypto.h>
#include <strings.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "yolotrain/error.hpp"

namespace yolotrain::endpoint {
namespace {

constexpr std::size_t kMaxTokenBytes = 4096;

bool token68(const std::string& s) {
  for (unsigned char c : s) {
    if (!std::isalnum(c) && std::strchr("-._~+/=", c) == nullptr) return false;
  }
  return true;
}

}  // namespace

std::string read_token_file(const std::filesystem::path& file) {
  const std::string name = "control_token_file=" + file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw Error(name + ": no such file (write the bearer token into it, or mount a Kubernetes Secret there)");
  }
  if (std::filesystem::file_size(file, ec) > kMaxTokenBytes + 64) {
    throw Error(name + ": longer than a bearer token (" + std::to_string(kMaxTokenBytes) + " bytes at most)");
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw Error(name + ": cannot be read (check its permissions)");
  std::string token = text.str();
  const auto first = token.find_first_not_of(" \t\r\n");
  token = first == std::string::npos ? "" : token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
  if (token.empty())
    throw Error(name + ": the file is empty; write a bearer token into it (e.g. openssl rand -hex 32)");
  if (token.size() > kMaxTokenBytes) throw Error(name + ": longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  if (!token68(token)) {
    throw Error(name + ": the token may hold only letters, digits and -._~+/= (RFC 6750), e.g. openssl rand -hex 32");
  }
  return token;
}

bool bearer_matches(const char* authorization, const std::string& token) {
  static constexpr char kScheme[] = "Bearer ";
  const std::size_t n = sizeof(kScheme) - 1;
  const bool scheme = authorization != nullptr && strncasecmp(authorization, kScheme, n) == 0;
  const char* given = scheme ? authorization + n : "";
  const bool same_length = std::strlen(given) == token.size();
  // Always token.size() bytes compared: against itself when the length differs.
  const bool equal = CRYPTO_memcmp(token.data(), same_length ? given : token.data(), token.size()) == 0;
  return scheme && same_length && equal && !token.empty();
}

}  // namespace yolotrain::endpoint
