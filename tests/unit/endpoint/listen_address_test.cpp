// control=HOST:PORT as users write it, and the bearer token read from a file and compared.
#include "catch.hpp"

#include <string>

#include "test_support.hpp"
#include "yolotrain/endpoint/bearer_token.hpp"
#include "yolotrain/endpoint/listen_address.hpp"
#include "yolotrain/lifecycle/files/atomic_file.hpp"

namespace ye = yolotrain::endpoint;

TEST_CASE("control= addresses: IPv4, localhost, [IPv6], :PORT, bad ones say what to write", "[endpoint]") {
  const ye::ListenAddress a = ye::parse_listen_address("127.0.0.1:8080");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 8080);
  CHECK(a.loopback());
  CHECK(ye::parse_listen_address(":0").host == "127.0.0.1");
  CHECK(ye::parse_listen_address("localhost:1").loopback());
  CHECK(ye::parse_listen_address("127.1.2.3:1").loopback());
  const ye::ListenAddress v6 = ye::parse_listen_address("[::1]:9000");
  CHECK(v6.host == "::1");
  CHECK(v6.loopback());
  CHECK(v6.text() == "[::1]:9000");
  CHECK_FALSE(ye::parse_listen_address("0.0.0.0:8080").loopback());
  CHECK_FALSE(ye::parse_listen_address("10.0.0.2:8080").loopback());
  CHECK_FALSE(ye::parse_listen_address("[::]:8080").loopback());
  CHECK_THROWS_WITH(ye::parse_listen_address("8080"), Catch::Contains("no port") && Catch::Contains("HOST:PORT"));
  CHECK_THROWS_WITH(ye::parse_listen_address("127.0.0.1:http"), Catch::Contains("0 to 65535"));
  CHECK_THROWS_WITH(ye::parse_listen_address("127.0.0.1:70000"), Catch::Contains("0 to 65535"));
  CHECK_THROWS_WITH(ye::parse_listen_address("trainer.local:80"), Catch::Contains("not an IP address"));
}

TEST_CASE("a bearer token file: trimmed, checked, never quoted in a message", "[endpoint]") {
  yolotrain::test::TempDir tmp;
  yolotrain::lifecycle::atomic_write(tmp / "token", "  s3cr3t-Token_0.9~+/=\n");
  CHECK(ye::read_token_file(tmp / "token") == "s3cr3t-Token_0.9~+/=");
  CHECK_THROWS_WITH(ye::read_token_file(tmp / "absent"), Catch::Contains("no such file"));
  yolotrain::lifecycle::atomic_write(tmp / "empty", "\n");
  CHECK_THROWS_WITH(ye::read_token_file(tmp / "empty"), Catch::Contains("empty"));
  yolotrain::lifecycle::atomic_write(tmp / "spaces", "two words\n");
  CHECK_THROWS_WITH(ye::read_token_file(tmp / "spaces"),
                    Catch::Contains("letters, digits") && !Catch::Contains("two words"));
  yolotrain::lifecycle::atomic_write(tmp / "huge", std::string(10000, 'a'));
  CHECK_THROWS_WITH(ye::read_token_file(tmp / "huge"), Catch::Contains("4096"));
}

TEST_CASE("bearer_matches takes exactly 'Bearer <token>'", "[endpoint]") {
  CHECK(ye::bearer_matches("Bearer abc", "abc"));
  CHECK(ye::bearer_matches("bearer abc", "abc"));  // the scheme is case-insensitive (RFC 7235)
  CHECK_FALSE(ye::bearer_matches("Bearer abd", "abc"));
  CHECK_FALSE(ye::bearer_matches("Bearer abc ", "abc"));
  CHECK_FALSE(ye::bearer_matches("Bearer ab", "abc"));
  CHECK_FALSE(ye::bearer_matches("Basic abc", "abc"));
  CHECK_FALSE(ye::bearer_matches("abc", "abc"));
  CHECK_FALSE(ye::bearer_matches(nullptr, "abc"));
  CHECK_FALSE(ye::bearer_matches("Bearer ", ""));  // an empty token matches nothing
}
