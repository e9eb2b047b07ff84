// libFuzzer target: a YOLO label file as the dataset scan reads it.
#include "fuzz_file.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz_file("label.txt", data, size);
  try {
    yolotrain::data::read_label_file(path, 80);
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
