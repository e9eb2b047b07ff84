// S3Location (s3:// URLs) and S3Settings (endpoint, region and credentials from the standard AWS
// environment and shared files, as the AWS CLI and SDKs read them).
#include <cstdlib>
#include <fstream>
#include <map>

#include "yolotrain/remote/s3_client.hpp"

namespace yolotrain::remote {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// The `key = value` lines of section `[section]` of an INI file ("" when absent).
std::map<std::string, std::string> ini_section(const std::string& path, const std::string& section) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line, current;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      current = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    if (current == section && eq != std::string::npos) out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

std::string home_file(const char* override_var, const char* relative) {
  const std::string given = env(override_var);
  if (!given.empty()) return given;
  const std::string home = env("HOME");
  return home.empty() ? std::string() : home + "/" + relative;
}

}  // namespace

bool S3Location::is_url(const std::string& text) { return text.rfind("s3://", 0) == 0; }

S3Location S3Location::parse(const std::string& url) {
  if (!is_url(url)) throw yolotrain::Error("'" + url + "' is not an s3:// URL; give s3://BUCKET/PREFIX");
  std::string rest = url.substr(5);
  const auto slash = rest.find('/');
  S3Location loc;
  loc.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) loc.prefix = rest.substr(slash + 1);
  while (!loc.prefix.empty() && loc.prefix.back() == '/') loc.prefix.pop_back();
  // S3's bucket naming rules: 3-63 characters of a-z 0-9 . -, starting and ending alphanumeric.
  const auto& b = loc.bucket;
  bool ok = b.size() >= 3 && b.size() <= 63 && std::isalnum(static_cast<unsigned char>(b.front())) &&
            std::isalnum(static_cast<unsigned char>(b.back()));
  for (char c : b) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-');
  if (!ok) {
    throw yolotrain::Error("'" + url + "': bucket name '" + b +
                "' is not valid (3-63 characters of a-z, 0-9, '.', '-'; starting and ending with a letter or digit)");
  }
  if (loc.prefix.find("//") != std::string::npos || (!loc.prefix.empty() && loc.prefix.front() == '/')) {
    throw yolotrain::Error("'" + url + "': the prefix has an empty path segment ('//')");
  }
  return loc;
}

std::string S3Location::url() const { return "s3://" + bucket + (prefix.empty() ? "" : "/" + prefix); }

std::string S3Location::key(const std::string& name) const { return prefix.empty() ? name : prefix + "/" + name; }

S3Settings S3Settings::from_environment() {
  S3Settings s;
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  const std::string credentials_file = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  const std::string config_file = home_file("AWS_CONFIG_FILE", ".aws/config");
  const auto config = ini_section(config_file, profile == "default" ? "default" : "profile " + profile);

  s.access_key_id = env("AWS_ACCESS_KEY_ID");
  s.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
  s.session_token = env("AWS_SESSION_TOKEN");
  s.credentials_from = "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";
  if (s.access_key_id.empty() || s.secret_access_key.empty()) {
    auto shared = ini_section(credentials_file, profile);
    if (shared.empty()) shared = config;  // the config file may hold the keys too
    s.access_key_id = shared["aws_access_key_id"];
    s.secret_access_key = shared["aws_secret_access_key"];
    s.session_token = shared["aws_session_token"];
    s.credentials_from = credentials_file + " [" + profile + "]";
  }
  if (s.access_key_id.empty() || s.secret_access_key.empty()) {
    throw yolotrain::Error(
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for "
        "temporary ones), or put aws_access_key_id / aws_secret_access_key under [" +
        profile + "] in " + (credentials_file.empty() ? std::string("~/.aws/credentials") : credentials_file));
  }

  s.region = env("AWS_REGION");
  if (s.region.empty()) s.region = env("AWS_DEFAULT_REGION");
  if (s.region.empty()) s.region = config.count("region") ? config.at("region") : "us-east-1";

  s.endpoint = env("AWS_ENDPOINT_URL_S3");
  if (s.endpoint.empty()) s.endpoint = env("AWS_ENDPOINT_URL");
  if (s.endpoint.empty() && config.count("endpoint_url")) s.endpoint = config.at("endpoint_url");
  if (s.endpoint.empty()) s.endpoint = "https://s3." + s.region + ".amazonaws.com";
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  if (s.endpoint.rfind("http://", 0) != 0 && s.endpoint.rfind("https://", 0) != 0) {
    throw yolotrain::Error("S3 endpoint '" + s.endpoint + "' (AWS_ENDPOINT_URL) must start with http:// or https://");
  }

  const std::string style = env("AWS_S3_ADDRESSING_STYLE");
  if (style == "path") {
    s.path_style = true;
  } else if (style == "virtual") {
    s.path_style = false;
  } else if (style.empty() || style == "auto") {
    s.path_style = s.endpoint.find(".amazonaws.com") == std::string::npos;
  } else {
    throw yolotrain::Error("AWS_S3_ADDRESSING_STYLE=" + style + ": use auto, path or virtual");
  }
  return s;
}

}  // namespace yolotrain::remote
