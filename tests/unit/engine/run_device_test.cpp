#include <torch/cuda.h>

#include "run_folder.hpp"
#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"

#include "catch.hpp"

namespace en = yolotrain::engine;
namespace lc = yolotrain::lifecycle;

TEST_CASE("device takes Ultralytics spellings and names what is wrong", "[engine]") {
  CHECK(en::run_device("cpu").is_cpu());
  CHECK(en::run_device("").is_cuda() == lc::cuda_usable());
  CHECK_THROWS_WITH(en::run_device("mps"), Catch::Contains("device=mps: expected cpu, cuda, cuda:N or a GPU index N"));
  CHECK_THROWS_WITH(en::run_device("0,1"), Catch::Contains("one process per GPU with torchrun"));
  CHECK_THROWS_AS(en::run_device("cuda:x"), en::ConfigError);
  if (!lc::cuda_usable()) {
    for (const char* spelling : {"cuda", "cuda:0", "0"}) {
      CHECK_THROWS_WITH(en::run_device(spelling), Catch::Contains("no CUDA device is usable here") &&
                                                      Catch::Contains("use device=cpu"));
    }
    return;
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  CHECK(en::run_device("0") == c10::Device(c10::kCUDA, 0));
  CHECK(en::run_device("cuda") == c10::Device(c10::kCUDA, 0));
  CHECK(en::run_device("", count - 1) == c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(count - 1)));
  CHECK_THROWS_WITH(en::run_device("cuda:" + std::to_string(count)), Catch::Contains("does not exist"));
}
