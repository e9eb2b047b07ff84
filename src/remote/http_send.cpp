#include "http_send.hpp"

#include <curl/curl.h>

#include <algorithm>

namespace yolotrain::remote::detail {
namespace {

std::size_t keep_body(char* data, std::size_t size, std::size_t n, void* into) {
  auto& body = *static_cast<std::string*>(into);
  if (body.size() < 512) body.append(data, std::min<std::size_t>(size * n, 512 - body.size()));
  return size * n;
}

}  // namespace

std::string send(const HttpSend& r) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return "curl_easy_init failed";
  std::string body;
  curl_slist* headers = nullptr;
  for (const auto& h : r.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!r.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, r.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &keep_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) return curl_easy_strerror(rc);
  if (code / 100 != 2) return "HTTP " + std::to_string(code) + ": " + body.substr(0, body.find('\n'));
  return "";
}

}  // namespace yolotrain::remote::detail
