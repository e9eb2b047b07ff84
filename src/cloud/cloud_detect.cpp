// The cloud from the DMI strings its hypervisor sets (see cloud_detect.hpp): read, never sent.
#include "yolotrain/cloud/cloud_detect.hpp"

#include <cstdlib>
#include <fstream>

namespace yolotrain::cloud {
namespace {

std::string read_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

std::filesystem::path dmi_folder() {
  const char* dir = std::getenv("YOLOTRAIN_DMI_DIR");
  return dir && *dir ? std::filesystem::path(dir) : std::filesystem::path("/sys/class/dmi/id");
}

Cloud detect_cloud(const std::filesystem::path& folder) {
  const auto read = [&](const char* name) { return read_line(folder / name); };
  const std::string vendor = read("sys_vendor"), product = read("product_name"), bios = read("bios_vendor");
  if (vendor == "Amazon EC2" || bios == "Amazon EC2" || has(read("product_version"), "amazon") ||
      has(read("bios_version"), "amazon")) {
    return Cloud::Aws;
  }
  if (product == "Google Compute Engine" || vendor == "Google" || bios == "Google") return Cloud::Gcp;
  if (vendor == "Microsoft Corporation" && read("chassis_asset_tag") == "7783-7084-3265-9085") return Cloud::Azure;
  return Cloud::None;
}

}  // namespace yolotrain::cloud
