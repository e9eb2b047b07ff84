// libFuzzer target: a yolo_train checkpoint file (header, metadata, checksums, payload).
#include "fuzz_file.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz_file("last-000000000001.ytckpt", data, size);
  try {
    yolotrain::lifecycle::CheckpointStore::read_meta(path);
  } catch (const yolotrain::Error&) {
  }
  try {
    yolotrain::lifecycle::CheckpointStore::load(path);
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
