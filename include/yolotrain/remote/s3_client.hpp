#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "yolotrain/error.hpp"

namespace yolotrain::remote {

/// A place in object storage: `s3://BUCKET/PREFIX`.
struct S3Location {
  std::string bucket;
  std::string prefix;  ///< without leading or trailing '/'; may be empty

  /// Parses `s3://bucket[/prefix]`; throws yolotrain::Error saying what is wrong.
  static S3Location parse(const std::string& url);
  /// True when `text` starts with "s3://".
  static bool is_url(const std::string& text);
  /// "s3://bucket/prefix".
  std::string url() const;
  /// The object key of `name` under the prefix ("prefix/name").
  std::string key(const std::string& name) const;
};

/// How to reach the store and whose credentials to use, from the standard AWS environment.
struct S3Settings {
  std::string endpoint;  ///< "https://s3.<region>.amazonaws.com", or AWS_ENDPOINT_URL(_S3)
  std::string region = "us-east-1";
  bool path_style = false;  ///< https://host/bucket/key instead of https://bucket.host/key
  std::string access_key_id, secret_access_key, session_token;
  std::string credentials_from;  ///< where the credentials came from, for messages (never the values)
  long connect_timeout_s = 10;   ///< connecting to the endpoint
  long stall_timeout_s = 60;     ///< a transfer that moves no byte for this long fails (transient)
  /// Objects larger than this go up in parts of this size (S3's multipart upload; at least
  /// 5 MiB, S3's smallest part): a part that fails is sent again alone, and objects past one
  /// PUT's 5 GiB limit can be written (up to 10,000 parts: 625 GiB). 64 MiB: a YOLOv8n training
  /// checkpoint (60 MB) stays one PUT, a YOLOv8x one (~1 GB) is 16 parts.
  std::size_t multipart_part_size = std::size_t{64} << 20;
  /// curl's CONNECT_TO entries ("host:port:addr:port"): send a request for one host to another
  /// address, keeping the Host header (tests, proxies).
  std::vector<std::string> connect_to;

  /// Reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_REGION /
  /// AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_S3_ADDRESSING_STYLE
  /// (auto | path | virtual; auto = virtual on amazonaws.com, path elsewhere), and, for what the
  /// environment lacks, the shared files (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
  /// AWS_CONFIG_FILE or ~/.aws/config) under AWS_PROFILE (default "default"). Throws
  /// yolotrain::Error when no credentials are found, saying where it looked.
  static S3Settings from_environment();
};

/// A failed S3 request. transient: worth retrying (no connection, timeouts, 5xx, throttling).
/// The message names the operation, bucket, key and the server's answer; never a credential.
class S3Error : public yolotrain::Error {
 public:
  S3Error(const std::string& message, long http_status, std::string code, bool transient)
      : yolotrain::Error(message), http_status(http_status), code(std::move(code)), transient(transient) {}
  long http_status;  ///< 0 when no answer came
  std::string code;  ///< the S3 error code ("NoSuchKey", "SlowDown"...) or curl's error text
  bool transient;
};

/// One object of a listing.
struct S3Object {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;
};

/// A raw request: the helpers below build these. `query` is sent sorted by name (SigV4's
/// canonical order), names and values percent-encoded as SigV4 requires.
struct S3Request {
  std::string method = "GET";
  std::string key;  ///< "" = the bucket itself
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::string> headers;  ///< "Name: value"
  std::string_view body;             ///< not copied: it must outlive send()
  bool bucket_in_host = true;  ///< false: the service root (no bucket), e.g. ListBuckets
};

/// A raw answer.
struct S3Response {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  ///< names lower-cased
};

/// An S3 client over libcurl: requests signed with AWS Signature V4 by curl itself
/// (CURLOPT_AWS_SIGV4), XML read with pugixml. Every upload (and every part of one) carries
/// Content-MD5 and x-amz-content-sha256, which the server checks against the bytes it received;
/// an object appears only when its single PUT or its multipart upload completes, so it is either
/// whole or absent. Thread-safe (a curl handle per request).
/// A request may be cancelled through `cancel` (checked about every second while it runs).
class S3Client {
 public:
  S3Client(S3Settings settings, std::string bucket);

  /// Sends a request; throws S3Error only when no HTTP answer came (connection, timeout,
  /// cancel). Any status comes back in the response.
  S3Response send(const S3Request& request, const std::atomic<bool>* cancel = nullptr) const;

  /// Writes `data` at `key`: one PUT, or above settings().multipart_part_size a multipart upload
  /// (each part tried up to 3 times on transient failures; on failure the upload is aborted).
  /// Throws S3Error.
  void put_object(const std::string& key, const std::string& data, const std::atomic<bool>* cancel = nullptr) const;
  /// GET of `key`; throws S3Error (code "NoSuchKey" when absent).
  std::string get_object(const std::string& key, const std::atomic<bool>* cancel = nullptr) const;
  /// DELETE of `key` (absent is not an error); throws S3Error.
  void delete_object(const std::string& key) const;
  /// Every object whose key starts with `prefix` (ListObjectsV2, all pages of at most
  /// `page_size` keys), in key order.
  std::vector<S3Object> list_objects(const std::string& prefix, std::size_t page_size = 1000) const;
  /// Checks the bucket answers to these credentials (a one-key listing under `prefix`); throws
  /// S3Error saying why not.
  void check_access(const std::string& prefix) const;

  const std::string& bucket() const { return bucket_; }
  const S3Settings& settings() const { return settings_; }
  /// The URL of `key` as requests go to it (for messages; no credentials in it).
  std::string url(const std::string& key, bool bucket_in_host = true) const;

 private:
  // send(), its failures named as the other messages name them (s3://bucket/key at endpoint).
  S3Response call(const std::string& what, const S3Request& request, const std::string& shown_key,
                  const std::atomic<bool>* cancel = nullptr) const;
  [[noreturn]] void fail(const std::string& what, const std::string& key, const S3Response& response) const;
  void put_single(const std::string& key, std::string_view data, const std::atomic<bool>* cancel) const;
  void put_multipart(const std::string& key, std::string_view data, const std::atomic<bool>* cancel) const;
  std::string put_part(const std::string& key, const std::string& upload_id, std::size_t number, std::size_t parts,
                       std::string_view data, const std::atomic<bool>* cancel) const;

  S3Settings settings_;
  std::string bucket_;
};

/// Percent-encodes as SigV4 requires: unreserved characters (A-Z a-z 0-9 - _ . ~) kept, '/'
/// kept when `keep_slash`, everything else %XX.
std::string s3_uri_encode(const std::string& text, bool keep_slash);

}  // namespace yolotrain::remote
