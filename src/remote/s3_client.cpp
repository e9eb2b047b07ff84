// S3Client: HTTP through libcurl, which also signs (AWS SigV4, CURLOPT_AWS_SIGV4, curl >= 7.75);
// XML answers (ListObjectsV2, errors) through pugixml. What is written here by hand is only the
// shape of the requests: the URL, the sorted and encoded query, the checksum headers.
#include "yolotrain/remote/s3_client.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <pugixml.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "yolotrain/lifecycle/files/sha256.hpp"

namespace yolotrain::remote {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string base64_md5(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_md5(), nullptr);
  unsigned char out[64];
  const int n = EVP_EncodeBlock(out, md, static_cast<int>(len));
  return std::string(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
}

struct Transfer {
  std::string_view body;
  std::size_t sent = 0;
  S3Response* response = nullptr;
  const std::atomic<bool>* cancel = nullptr;
};

std::size_t on_read(char* out, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t take = std::min(size * n, t->body.size() - t->sent);
  std::memcpy(out, t->body.data() + t->sent, take);
  t->sent += take;
  return take;
}

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<Transfer*>(user)->response->body.append(data, size * n);
  return size * n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  const std::string line(data, size * n);
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r\n") + 1);
    static_cast<Transfer*>(user)->response->headers[name] = value;
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<Transfer*>(user)->cancel;
  return cancel && cancel->load() ? 1 : 0;
}

bool transient_curl_error(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR: case CURLE_COULDNT_RESOLVE_PROXY: case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// S3's answers that mean "try again later" (AWS's retry guidance).
bool transient_answer(long status, const std::string& code) {
  static const char* codes[] = {"SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable",
                                "Throttling", "ThrottlingException", "RequestTimeTooSkewed"};
  if (status >= 500 || status == 429 || status == 408) return true;
  return std::any_of(std::begin(codes), std::end(codes), [&](const char* c) { return code == c; });
}

// Parses an answer's body into `doc`; false when it is not XML. (S3 may answer 200 with an
// <Error> inside, e.g. CompleteMultipartUpload: callers check for it.)
bool parse_xml(pugi::xml_document& doc, const S3Response& response) {
  return static_cast<bool>(doc.load_buffer(response.body.data(), response.body.size()));
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

std::string s3_uri_encode(const std::string& text, bool keep_slash) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  return out;
}

S3Client::S3Client(S3Settings settings, std::string bucket)
    : settings_(std::move(settings)), bucket_(std::move(bucket)) {
  global_init();
}

std::string S3Client::url(const std::string& key, bool bucket_in_host) const {
  const std::string& e = settings_.endpoint;
  const std::string path = s3_uri_encode(key, true);
  if (!bucket_in_host) return e + "/" + path;
  if (settings_.path_style) return e + "/" + bucket_ + "/" + path;
  const auto scheme_end = e.find("://") + 3;
  return e.substr(0, scheme_end) + bucket_ + "." + e.substr(scheme_end) + "/" + path;
}

S3Response S3Client::send(const S3Request& request, const std::atomic<bool>* cancel) const {
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) throw S3Error("S3: curl_easy_init failed", 0, "curl", true);
  CURL* c = curl.get();
  auto query = request.query;
  std::sort(query.begin(), query.end());
  std::string target = url(request.key, request.bucket_in_host);
  for (std::size_t i = 0; i < query.size(); ++i) {
    target += (i ? "&" : "?") + s3_uri_encode(query[i].first, false) + "=" + s3_uri_encode(query[i].second, false);
  }
  curl_slist* raw_headers = nullptr;
  for (const auto& h : request.headers) raw_headers = curl_slist_append(raw_headers, h.c_str());
  const std::string payload_hash = "x-amz-content-sha256: " + lifecycle::Sha256().update(request.body).hex_digest();
  raw_headers = curl_slist_append(raw_headers, payload_hash.c_str());
  if (!settings_.session_token.empty()) {
    raw_headers = curl_slist_append(raw_headers, ("x-amz-security-token: " + settings_.session_token).c_str());
  }
  // No "Expect:" to switch 100-continue off: curl 7.88 would sign the removed header.
  std::unique_ptr<curl_slist, CurlFree> headers(raw_headers);
  curl_slist* raw_connect = nullptr;
  for (const auto& entry : settings_.connect_to) raw_connect = curl_slist_append(raw_connect, entry.c_str());
  std::unique_ptr<curl_slist, CurlFree> connect_to(raw_connect);

  S3Response response;
  Transfer transfer{request.body, 0, &response, cancel};
  const std::string sigv4 = "aws:amz:" + settings_.region + ":s3";
  curl_easy_setopt(c, CURLOPT_URL, target.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  if (connect_to) curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_to.get());
  curl_easy_setopt(c, CURLOPT_USERNAME, settings_.access_key_id.c_str());
  curl_easy_setopt(c, CURLOPT_PASSWORD, settings_.secret_access_key.c_str());
  curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, settings_.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, settings_.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
  if (request.method == "PUT") {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "POST") {  // the body, possibly empty, with its length
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    const bool cancelled = rc == CURLE_ABORTED_BY_CALLBACK;
    throw S3Error(std::string("S3 ") + request.method + " " + url(request.key, request.bucket_in_host) + ": " +
                      (cancelled ? "cancelled" : curl_easy_strerror(rc)),
                  0, cancelled ? "cancelled" : curl_easy_strerror(rc), !cancelled && transient_curl_error(rc));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

void S3Client::fail(const std::string& what, const std::string& key, const S3Response& response) const {
  std::string code, message;
  pugi::xml_document doc;
  if (parse_xml(doc, response)) {
    code = doc.child("Error").child_value("Code");
    message = doc.child("Error").child_value("Message");
  }
  if (code.empty()) code = response.status == 404 ? "NotFound" : "HTTP " + std::to_string(response.status);
  std::string text = "S3 " + what + " s3://" + bucket_ + "/" + key + " at " + settings_.endpoint + ": HTTP " +
                     std::to_string(response.status) + " " + code + (message.empty() ? "" : " (" + message + ")");
  if (code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied") {
    text += "; check the credentials from " + settings_.credentials_from;
  } else if (code == "NoSuchBucket") {
    text += "; create the bucket or fix the name in remote=";
  }
  throw S3Error(text, response.status, code, transient_answer(response.status, code));
}

S3Response S3Client::call(const std::string& what, const S3Request& request, const std::string& shown_key,
                          const std::atomic<bool>* cancel) const {
  try {
    return send(request, cancel);
  } catch (const S3Error& e) {
    std::string text =
        "S3 " + what + " s3://" + bucket_ + "/" + shown_key + " at " + settings_.endpoint + ": " + e.code;
    if (e.transient) text += " (is the endpoint right? it comes from AWS_ENDPOINT_URL, else AWS's for the region)";
    throw S3Error(text, 0, e.code, e.transient);
  }
}

void S3Client::put_object(const std::string& key, const std::string& data, const std::atomic<bool>* cancel) const {
  if (data.size() > settings_.multipart_part_size) put_multipart(key, data, cancel);
  else put_single(key, data, cancel);
}

void S3Client::put_single(const std::string& key, std::string_view data, const std::atomic<bool>* cancel) const {
  S3Request r;
  r.method = "PUT";
  r.key = key;
  r.body = data;
  r.headers = {"Content-MD5: " + base64_md5(data), "Content-Type: application/octet-stream"};
  const S3Response response = call("PUT", r, key, cancel);
  if (response.status != 200) fail("PUT", key, response);
}

namespace {

constexpr std::size_t kMinPartSize = std::size_t{5} << 20;  // S3's smallest part but the last
constexpr std::size_t kMaxParts = 10000;
constexpr int kPartAttempts = 3;

// Sleeps `seconds`, waking early when `cancel` is set.
void pause_unless_cancelled(double seconds, const std::atomic<bool>* cancel) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until && !(cancel && cancel->load())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

// S3's multipart upload (CreateMultipartUpload, UploadPart per part, CompleteMultipartUpload):
// the object appears only at the completion, whole; any failure aborts the upload so that no
// parts are left billed in the bucket.
void S3Client::put_multipart(const std::string& key, std::string_view data, const std::atomic<bool>* cancel) const {
  const std::size_t part = std::max(settings_.multipart_part_size, kMinPartSize);
  const std::size_t parts = (data.size() + part - 1) / part;
  if (parts > kMaxParts) {
    throw S3Error("S3 PUT s3://" + bucket_ + "/" + key + ": " + std::to_string(data.size()) + " bytes need " +
                      std::to_string(parts) + " parts of " + std::to_string(part) + " bytes, more than S3's " +
                      std::to_string(kMaxParts) + "; raise multipart_part_size",
                  0, "TooManyParts", false);
  }
  S3Request create;
  create.method = "POST";
  create.key = key;
  create.query = {{"uploads", ""}};
  create.headers = {"Content-Type: application/octet-stream"};
  const S3Response created = call("PUT (create multipart upload)", create, key, cancel);
  pugi::xml_document doc;
  const std::string upload_id = created.status == 200 && parse_xml(doc, created)
                                    ? doc.child("InitiateMultipartUploadResult").child_value("UploadId")
                                    : "";
  if (upload_id.empty()) fail("PUT (create multipart upload)", key, created);
  try {
    pugi::xml_document complete;
    auto list = complete.append_child("CompleteMultipartUpload");
    for (std::size_t i = 0; i < parts; ++i) {
      const std::string etag = put_part(key, upload_id, i + 1, parts, data.substr(i * part, part), cancel);
      auto p = list.append_child("Part");
      p.append_child("PartNumber").text().set(std::to_string(i + 1).c_str());
      p.append_child("ETag").text().set(etag.c_str());
    }
    std::ostringstream xml;
    complete.save(xml, "", pugi::format_raw);
    const std::string body = xml.str();
    S3Request finish;
    finish.method = "POST";
    finish.key = key;
    finish.query = {{"uploadId", upload_id}};
    finish.body = body;
    finish.headers = {"Content-Type: application/xml"};  // the body's SHA-256 is signed, as every request's
    const S3Response done = call("PUT (complete multipart upload)", finish, key, cancel);
    pugi::xml_document answer;
    if (done.status != 200 || !parse_xml(answer, done) || answer.child("Error") ||
        !answer.child("CompleteMultipartUploadResult")) {
      fail("PUT (complete multipart upload)", key, done);
    }
  } catch (const S3Error&) {
    S3Request abort;
    abort.method = "DELETE";
    abort.key = key;
    abort.query = {{"uploadId", upload_id}};
    try {
      send(abort);  // best effort: a bucket lifecycle rule removes what is left otherwise
    } catch (const S3Error&) {
    }
    throw;
  }
}

// One part, sent again (up to kPartAttempts in all) when the failure is transient; its ETag.
std::string S3Client::put_part(const std::string& key, const std::string& upload_id, std::size_t number,
                               std::size_t parts, std::string_view data, const std::atomic<bool>* cancel) const {
  const std::string what = "PUT (part " + std::to_string(number) + " of " + std::to_string(parts) + ")";
  S3Request r;
  r.method = "PUT";
  r.key = key;
  r.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}};
  r.body = data;
  r.headers = {"Content-MD5: " + base64_md5(data)};
  for (int attempt = 1;; ++attempt) {
    try {
      const S3Response response = call(what, r, key, cancel);
      const auto etag = response.headers.find("etag");
      if (response.status != 200) fail(what, key, response);
      if (etag == response.headers.end() || etag->second.empty()) {
        throw S3Error("S3 " + what + " s3://" + bucket_ + "/" + key + " at " + settings_.endpoint +
                          ": the answer has no ETag",
                      response.status, "NoETag", false);
      }
      return etag->second;
    } catch (const S3Error& e) {
      if (!e.transient || attempt >= kPartAttempts || (cancel && cancel->load())) throw;
      pause_unless_cancelled(0.5 * attempt, cancel);
    }
  }
}

std::string S3Client::get_object(const std::string& key, const std::atomic<bool>* cancel) const {
  S3Request r;
  r.key = key;
  S3Response response = call("GET", r, key, cancel);
  if (response.status != 200) fail("GET", key, response);
  return std::move(response.body);
}

void S3Client::delete_object(const std::string& key) const {
  S3Request r;
  r.method = "DELETE";
  r.key = key;
  const S3Response response = call("DELETE", r, key);
  if (response.status != 204 && response.status != 200 && response.status != 404) fail("DELETE", key, response);
}

std::vector<S3Object> S3Client::list_objects(const std::string& prefix, std::size_t page_size) const {
  std::vector<S3Object> out;
  std::string token;
  for (;;) {
    S3Request r;
    r.query = {{"list-type", "2"}, {"max-keys", std::to_string(page_size)}, {"prefix", prefix}};
    if (!token.empty()) r.query.emplace_back("continuation-token", token);
    const S3Response response = call("LIST", r, prefix + "*");
    if (response.status != 200) fail("LIST", prefix + "*", response);
    pugi::xml_document doc;
    if (!parse_xml(doc, response)) {
      throw S3Error("S3 LIST s3://" + bucket_ + "/" + prefix + "*: the answer is not XML", response.status, "BadXML",
                    false);
    }
    const auto result = doc.child("ListBucketResult");
    for (const auto& item : result.children("Contents")) {
      S3Object o;
      o.key = item.child_value("Key");
      o.size = std::strtoull(item.child_value("Size"), nullptr, 10);
      o.etag = item.child_value("ETag");
      out.push_back(std::move(o));
    }
    token = result.child_value("NextContinuationToken");
    if (std::string(result.child_value("IsTruncated")) != "true" || token.empty()) break;
  }
  std::sort(out.begin(), out.end(), [](const S3Object& a, const S3Object& b) { return a.key < b.key; });
  return out;
}

void S3Client::check_access(const std::string& prefix) const {
  S3Request r;
  r.query = {{"list-type", "2"}, {"max-keys", "1"}, {"prefix", prefix}};
  const S3Response response = call("LIST", r, prefix + "*");
  if (response.status != 200) fail("LIST", prefix + "*", response);
}

}  // namespace yolotrain::remote
