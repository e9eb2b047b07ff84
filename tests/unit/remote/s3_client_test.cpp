// S3Client against AWS's own published Signature V4 examples (the S3 documentation's example
// requests, their credentials, date and expected signatures), a one-shot HTTP server that records
// what the client sends and answers as told, and S3Settings from the environment.
#include "catch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <thread>

#include "test_support.hpp"
#include "yolotrain/remote/s3_client.hpp"

namespace yt = yolotrain::test;

namespace {

// Accepts one connection on 127.0.0.1, reads the request head (and a body of Content-Length
// bytes), answers `answer`, and hands back what it read.
class OneShotServer {
 public:
  explicit OneShotServer(std::string answer) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    REQUIRE(::listen(fd_, 1) == 0);
    request_ = std::async(std::launch::async, [this, answer = std::move(answer)] { return serve(answer); });
  }
  ~OneShotServer() { ::close(fd_); }
  int port() const { return port_; }
  std::string request() { return request_.get(); }

 private:
  std::string serve(const std::string& answer) {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return "";
    std::string got;
    char buf[4096];
    std::size_t want = std::string::npos;
    while (want == std::string::npos || got.size() < want) {
      const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
      const auto head_end = got.find("\r\n\r\n");
      if (want == std::string::npos && head_end != std::string::npos) {
        const auto cl = got.find("Content-Length: ");
        const std::size_t body = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
        want = head_end + 4 + body;
      }
    }
    ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(c);
    return got;
  }

  int fd_ = -1;
  int port_ = 0;
  std::future<std::string> request_;
};

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

std::string answer(int status, const std::string& reason, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nContent-Type: application/xml\r\nConnection: close\r\n\r\n" + body;
}

// The S3 documentation's example account, bucket and region, sent to `server` instead.
yolotrain::remote::S3Settings aws_example(int port) {
  yolotrain::remote::S3Settings s;
  s.endpoint = "http://s3.amazonaws.com";
  s.region = "us-east-1";
  s.access_key_id = "AKIAIOSFODNN7EXAMPLE";
  s.secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  s.credentials_from = "the test";
  s.connect_to = {"examplebucket.s3.amazonaws.com:80:127.0.0.1:" + std::to_string(port)};
  return s;
}

std::string signature_in(const std::string& request) {
  const auto at = request.find("Signature=");
  return at == std::string::npos ? "" : request.substr(at + 10, 64);
}

}  // namespace

// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Examples".
TEST_CASE("requests are signed as AWS's Signature V4 examples say", "[remote][s3]") {
  SECTION("GET Object with a Range header") {
    OneShotServer server(kOk);
    yolotrain::remote::S3Client client(aws_example(server.port()), "examplebucket");
    yolotrain::remote::S3Request r;
    r.key = "test.txt";
    r.headers = {"Range: bytes=0-9", "x-amz-date: 20130524T000000Z"};
    CHECK(client.send(r).status == 200);
    const std::string sent = server.request();
    CHECK_THAT(sent, Catch::StartsWith("GET /test.txt HTTP/1.1\r\nHost: examplebucket.s3.amazonaws.com\r\n"));
    CHECK_THAT(sent, Catch::Contains("Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                                     "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"));
    CHECK(signature_in(sent) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  }
  SECTION("GET Bucket (list objects) with its query, given in another order") {
    OneShotServer server(kOk);
    yolotrain::remote::S3Client client(aws_example(server.port()), "examplebucket");
    yolotrain::remote::S3Request r;
    r.query = {{"prefix", "J"}, {"max-keys", "2"}};  // sent sorted, as the canonical request has them
    r.headers = {"x-amz-date: 20130524T000000Z"};
    CHECK(client.send(r).status == 200);
    const std::string sent = server.request();
    CHECK_THAT(sent, Catch::StartsWith("GET /?max-keys=2&prefix=J HTTP/1.1\r\n"));
    CHECK(signature_in(sent) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  }
  SECTION("PUT Object with a body, a Date and a storage class") {
    OneShotServer server(kOk);
    yolotrain::remote::S3Client client(aws_example(server.port()), "examplebucket");
    yolotrain::remote::S3Request r;
    r.method = "PUT";
    r.key = "test$file.text";
    r.body = "Welcome to Amazon S3.";
    r.headers = {"Date: Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class: REDUCED_REDUNDANCY",
                 "x-amz-date: 20130524T000000Z"};
    CHECK(client.send(r).status == 200);
    const std::string sent = server.request();
    CHECK_THAT(sent, Catch::StartsWith("PUT /test%24file.text HTTP/1.1\r\n"));
    CHECK_THAT(sent, Catch::Contains("x-amz-content-sha256: "
                                     "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"));
    CHECK(signature_in(sent) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    CHECK_THAT(sent, Catch::EndsWith("\r\n\r\nWelcome to Amazon S3."));
  }
}

TEST_CASE("an upload carries Content-MD5 and the payload's SHA-256, and a session token is sent signed",
          "[remote][s3]") {
  OneShotServer server(kOk);
  yolotrain::remote::S3Settings settings = aws_example(server.port());
  settings.session_token = "a-session-token";
  yolotrain::remote::S3Client(settings, "examplebucket").put_object("run/weights/last.ytckpt", "Welcome to Amazon S3.");
  const std::string sent = server.request();
  CHECK_THAT(sent, Catch::Contains("Content-MD5: 1EfQ6PKJ8WoS/2AnznfCWA=="));  // base64 of the MD5
  CHECK_THAT(sent, Catch::Contains("x-amz-security-token: a-session-token"));
  CHECK_THAT(sent, Catch::Contains("SignedHeaders=content-md5;content-type;host;x-amz-content-sha256;x-amz-date;"
                                   "x-amz-security-token,"));
}

TEST_CASE("S3 errors say what failed, whether to retry, and never the secret", "[remote][s3]") {
  SECTION("503 SlowDown is transient") {
    OneShotServer server(answer(
        503, "Slow Down", "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"));
    yolotrain::remote::S3Client client(aws_example(server.port()), "examplebucket");
    try {
      client.put_object("a/b.csv", "x");
      FAIL("no error");
    } catch (const yolotrain::remote::S3Error& e) {
      CHECK(e.transient);
      CHECK(e.http_status == 503);
      CHECK(e.code == "SlowDown");
      CHECK_THAT(e.what(), Catch::Contains("PUT s3://examplebucket/a/b.csv") && Catch::Contains("SlowDown") &&
                               Catch::Contains("Please reduce your request rate."));
    }
  }
  SECTION("403 InvalidAccessKeyId is not, and names where the credentials came from") {
    OneShotServer server(answer(403, "Forbidden",
                                "<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided "
                                "does not exist in our records.</Message></Error>"));
    yolotrain::remote::S3Client client(aws_example(server.port()), "examplebucket");
    try {
      client.check_access("run/");
      FAIL("no error");
    } catch (const yolotrain::remote::S3Error& e) {
      CHECK_FALSE(e.transient);
      CHECK(e.code == "InvalidAccessKeyId");
      CHECK_THAT(e.what(), Catch::Contains("check the credentials from the test"));
      CHECK_THAT(e.what(), !Catch::Contains("wJalrXUtnFEMI"));
    }
  }
  SECTION("no server is transient") {
    yolotrain::remote::S3Settings s = aws_example(yt::free_port());
    yolotrain::remote::S3Client client(s, "examplebucket");
    try {
      client.get_object("k");
      FAIL("no error");
    } catch (const yolotrain::remote::S3Error& e) {
      CHECK(e.transient);
      CHECK(e.http_status == 0);
      // libcurl's own words follow (curl 7.88: "Couldn't connect to server", 8.14: "Could not connect ...").
      CHECK_THAT(e.what(), Catch::Contains("GET s3://examplebucket/k at http://s3.amazonaws.com: Could"));
      CHECK_THAT(e.what(), Catch::Contains("connect to server"));
    }
  }
}

TEST_CASE("s3:// URLs are parsed and bad ones named", "[remote][s3]") {
  const auto loc = yolotrain::remote::S3Location::parse("s3://my-bucket/runs/exp1/");
  CHECK(loc.bucket == "my-bucket");
  CHECK(loc.prefix == "runs/exp1");
  CHECK(loc.key("weights/best.ytckpt") == "runs/exp1/weights/best.ytckpt");
  CHECK(loc.url() == "s3://my-bucket/runs/exp1");
  CHECK(yolotrain::remote::S3Location::parse("s3://bucket").key("a") == "a");
  CHECK_THROWS_WITH(yolotrain::remote::S3Location::parse("runs/exp"), Catch::Contains("not an s3:// URL"));
  CHECK_THROWS_WITH(yolotrain::remote::S3Location::parse("s3://My_Bucket/x"),
                    Catch::Contains("bucket name 'My_Bucket' is not valid"));
  CHECK_THROWS_WITH(yolotrain::remote::S3Location::parse("s3://bucket//x"), Catch::Contains("empty path segment"));
}

TEST_CASE("S3 settings come from the AWS environment, else the shared files", "[remote][s3]") {
  yt::TempDir tmp;
  SECTION("environment") {
    yt::ScopedEnv env({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                       {"AWS_SESSION_TOKEN", "TOKEN"}, {"AWS_REGION", "eu-west-3"}, {"AWS_DEFAULT_REGION", "us-west-2"},
                       {"AWS_ENDPOINT_URL", ""}, {"AWS_ENDPOINT_URL_S3", ""}, {"AWS_S3_ADDRESSING_STYLE", ""},
                       {"AWS_CONFIG_FILE", (tmp / "none").string()}});
    const auto s = yolotrain::remote::S3Settings::from_environment();
    CHECK(s.access_key_id == "AKID");
    CHECK(s.session_token == "TOKEN");
    CHECK(s.region == "eu-west-3");
    CHECK(s.endpoint == "https://s3.eu-west-3.amazonaws.com");
    CHECK_FALSE(s.path_style);
    CHECK(yolotrain::remote::S3Client(s, "b").url("k/x") == "https://b.s3.eu-west-3.amazonaws.com/k/x");
  }
  SECTION("an S3-compatible endpoint: path-style unless told virtual (Alibaba OSS)") {
    yt::ScopedEnv env({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                       {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"}, {"AWS_ENDPOINT_URL_S3", ""},
                       {"AWS_S3_ADDRESSING_STYLE", ""}});
    auto s = yolotrain::remote::S3Settings::from_environment();
    CHECK(s.path_style);
    CHECK(yolotrain::remote::S3Client(s, "b").url("k") == "http://127.0.0.1:9000/b/k");
    yt::ScopedEnv oss({{"AWS_ENDPOINT_URL", "https://oss-cn-hangzhou.aliyuncs.com"},
                       {"AWS_S3_ADDRESSING_STYLE", "virtual"}});
    s = yolotrain::remote::S3Settings::from_environment();
    CHECK(yolotrain::remote::S3Client(s, "b").url("k") == "https://b.oss-cn-hangzhou.aliyuncs.com/k");
  }
  SECTION("the shared credentials file and a profile") {
    std::ofstream(tmp / "credentials") << "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n"
                                          "[train]\naws_access_key_id = T\naws_secret_access_key = TS\n";
    std::ofstream(tmp / "config") << "[profile train]\nregion = ap-south-1\n";
    yt::ScopedEnv env({{"AWS_ACCESS_KEY_ID", ""}, {"AWS_SECRET_ACCESS_KEY", ""}, {"AWS_SESSION_TOKEN", ""},
                       {"AWS_REGION", ""}, {"AWS_DEFAULT_REGION", ""}, {"AWS_ENDPOINT_URL", ""},
                       {"AWS_ENDPOINT_URL_S3", ""}, {"AWS_PROFILE", "train"},
                       {"AWS_SHARED_CREDENTIALS_FILE", (tmp / "credentials").string()},
                       {"AWS_CONFIG_FILE", (tmp / "config").string()}});
    const auto s = yolotrain::remote::S3Settings::from_environment();
    CHECK(s.access_key_id == "T");
    CHECK(s.secret_access_key == "TS");
    CHECK(s.region == "ap-south-1");
    CHECK_THAT(s.credentials_from, Catch::Contains("credentials [train]"));
  }
  SECTION("none: a message saying where it looked") {
    yt::ScopedEnv env({{"AWS_ACCESS_KEY_ID", ""}, {"AWS_SECRET_ACCESS_KEY", ""}, {"AWS_PROFILE", ""},
                       {"AWS_SHARED_CREDENTIALS_FILE", (tmp / "missing").string()},
                       {"AWS_CONFIG_FILE", (tmp / "missing").string()}});
    CHECK_THROWS_WITH(yolotrain::remote::S3Settings::from_environment(),
                      Catch::Contains("no S3 credentials") && Catch::Contains("AWS_ACCESS_KEY_ID") &&
                          Catch::Contains((tmp / "missing").string()));
  }
}
