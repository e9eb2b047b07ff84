// libFuzzer target: a dataset's data.yaml.
#include "fuzz_file.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz_file("data.yaml", data, size);
  try {
    yolotrain::data::load_data_yaml(path);
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
