#include "yolotrain/lifecycle/files/sha256.hpp"

#include "catch.hpp"

#include <string>

using yolotrain::lifecycle::Sha256;
using yolotrain::lifecycle::sha256_hex;

TEST_CASE("SHA-256 matches the FIPS 180-4 test vectors", "[lifecycle]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256 gives the same digest however the input is split", "[lifecycle]") {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7));
  for (std::size_t split : {1u, 63u, 64u, 65u, 500u}) {
    Sha256 sha;
    for (std::size_t i = 0; i < data.size(); i += split) sha.update(data.substr(i, split));
    CHECK(sha.hex_digest() == sha256_hex(data));
  }
}
