// libFuzzer target: an Ultralytics .pt (torch.save zip + pickle + storages) read from bytes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "yolotrain/error.hpp"
#include "yolotrain/io/ultralytics_pt.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    yolotrain::io::read_ultralytics_pt_bytes(std::vector<std::uint8_t>(data, data + size), "fuzz.pt");
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
