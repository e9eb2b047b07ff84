#pragma once
// One HTTP request with a body (libcurl) for the clients that report a run's figures: the
// Pushgateway's PUT, Kubeflow Trainer's progress POST. Private to yolotrain::remote.
#include <chrono>
#include <string>
#include <vector>

namespace yolotrain::remote::detail {

struct HttpSend {
  std::string method;                ///< "PUT", "POST"
  std::string url;
  std::string body;
  std::vector<std::string> headers;  ///< "Name: value"
  std::string ca_file;               ///< a CA bundle to verify an https server with ("": the system's)
  std::chrono::milliseconds timeout{5000};
};

/// "" when the server answered 2xx, else why not ("HTTP 403: <first line of the body>", curl's error).
std::string send(const HttpSend& request);

}  // namespace yolotrain::remote::detail
