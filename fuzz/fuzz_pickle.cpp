// libFuzzer target: io::read_pickle on arbitrary bytes (with a persistent-id loader, as torch.save
// pickles use). Bad bytes must give yolotrain::Error, never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>

#include "yolotrain/error.hpp"
#include "yolotrain/io/pickle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const yolotrain::io::PersistentLoad load = [](const yolotrain::io::PickleRef& pid) { return pid; };
  try {
    yolotrain::io::read_pickle(data, size, "fuzz.pkl", load);
  } catch (const yolotrain::Error&) {
  }
  return 0;
}
