#include "metadata_http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

namespace yolotrain::cloud::detail {
namespace {

constexpr std::size_t kMaxBody = 64 * 1024;

std::size_t keep(char* data, std::size_t size, std::size_t n, void* into) {
  auto& text = *static_cast<std::string*>(into);
  if (text.size() < kMaxBody) text.append(data, std::min(size * n, kMaxBody - text.size()));
  return size * n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::string HttpReply::header(const std::string& name) const {
  const std::string want = lower(name) + ":";
  std::size_t at = 0;
  while (at < headers.size()) {
    const std::size_t end = std::min(headers.find('\n', at), headers.size());
    std::string line = headers.substr(at, end - at);
    if (lower(line).rfind(want, 0) == 0) {
      std::string value = line.substr(want.size());
      value.erase(0, value.find_first_not_of(" \t"));
      while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
      return value;
    }
    at = end + 1;
  }
  return "";
}

HttpReply send(const HttpRequest& r) {
  HttpReply reply;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    reply.error = "curl_easy_init failed";
    return reply;
  }
  curl_slist* headers = nullptr;
  for (const auto& h : r.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  if (r.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &keep);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &keep);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply.headers);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  } else {
    reply.error = curl_easy_strerror(rc);
    reply.body.clear();
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return reply;
}

std::string describe(const HttpRequest& request, const HttpReply& reply) {
  std::string why = reply.error;
  if (why.empty()) {
    std::string first = reply.body.substr(0, std::min<std::size_t>(reply.body.find('\n'), 160));
    why = "HTTP " + std::to_string(reply.status) + (first.empty() ? "" : ": " + first);
  }
  std::string url = request.url.substr(0, request.url.find('?'));
  return request.method + " " + url + ": " + why;
}

}  // namespace yolotrain::cloud::detail
