#pragma once
// One HTTP request to a metadata server (libcurl): short timeouts, no proxy (a metadata server is
// link-local or, in tests, loopback: an HTTP_PROXY set for the run's other traffic must not carry
// it), no redirects, a bounded body. Private to yolotrain::cloud.
#include <chrono>
#include <string>
#include <vector>

namespace yolotrain::cloud::detail {

struct HttpReply {
  long status = 0;     ///< 0: no answer (error says why)
  std::string body;    ///< at most 64 KiB
  std::string error;   ///< "" when an HTTP answer came
  std::string header(const std::string& name) const;  ///< a response header's value, "" if absent
  std::string headers;  ///< the raw response headers
};

struct HttpRequest {
  HttpRequest() = default;
  HttpRequest(std::string method, std::string url, std::vector<std::string> headers = {}, std::string body = "")
      : method(std::move(method)), url(std::move(url)), headers(std::move(headers)), body(std::move(body)) {}
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"
  std::string body;
  std::chrono::milliseconds timeout{2000};
};

HttpReply send(const HttpRequest& request);

/// "GET http://169.254.169.254/latest/...: <why>" for messages.
std::string describe(const HttpRequest& request, const HttpReply& reply);

}  // namespace yolotrain::cloud::detail
