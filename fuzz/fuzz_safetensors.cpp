// libFuzzer target: lifecycle::decode_safetensors (the safetensors reader, also the checkpoint payload).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/files/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::map<std::string, std::string> meta;
  try {
    yolotrain::lifecycle::decode_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                                             &meta);
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
