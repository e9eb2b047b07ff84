#pragma once
// The shared secret of a control endpoint: a bearer token (RFC 6750) read from a file, such as a
// Kubernetes Secret mounted into the trainer's and the sidecar's containers.
#include <filesystem>
#include <string>

namespace yolotrain::endpoint {

/// The token in `file`: its whole content without surrounding whitespace. Throws yolotrain::Error
/// naming the file (never its content) when it is missing, unreadable, empty, longer than 4096
/// bytes, or holds characters a bearer token cannot (RFC 6750's token68: letters, digits, -._~+/=).
std::string read_token_file(const std::filesystem::path& file);

/// Whether `authorization` (an Authorization header's value, or null) is "Bearer <token>". The
/// comparison (OpenSSL's CRYPTO_memcmp over the token's length, whatever was given) takes the same
/// time wherever the two differ, so response times do not leak the token; a given token of another
/// length reveals only that (as Go's subtle.ConstantTimeCompare).
bool bearer_matches(const char* authorization, const std::string& token);

}  // namespace yolotrain::endpoint
