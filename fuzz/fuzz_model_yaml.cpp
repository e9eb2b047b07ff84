// libFuzzer target: a model YAML (Ultralytics' schema), parsed into layer rows.
#include "fuzz_file.hpp"
#include "model_def.hpp"
#include "yolotrain/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz_file("model.yaml", data, size);
  try {
    yolotrain::nn::detail::load_model_def(path, "", std::nullopt, 3);
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
