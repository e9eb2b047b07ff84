#include <ATen/ATen.h>

#include "test_support.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"

#include "catch.hpp"

#include <stdexcept>

namespace lc = yolotrain::lifecycle;

TEST_CASE("without CUDA the guard is a no-op that says so", "[lifecycle]") {
  if (lc::cuda_usable()) {
    SUCCEED("a CUDA device is present: see the [cuda] tests");
    return;
  }
  std::string message;
  {
    lc::CudaGuardOptions options;
    options.on_release = [&](const lc::CudaGuardReport& r) { message = r.message; };
    lc::CudaGuard guard(options);
    CHECK_FALSE(guard.at_start().cuda);
  }
  CHECK_THAT(message, Catch::Contains("nothing to release"));
  CHECK(lc::cuda_release_cached());
  CHECK_FALSE(lc::cuda_memory().cuda);
}

TEST_CASE("the guard releases GPU memory on return and while an exception unwinds", "[lifecycle][cuda]") {
  if (const auto why = yolotrain::test::cuda_missing()) {
    WARN(*why);
    return;
  }
  for (const bool throw_inside : {false, true}) {
    CAPTURE(throw_inside);
    lc::CudaGuardReport report;
    try {
      lc::CudaGuardOptions options;
      options.on_release = [&](const lc::CudaGuardReport& r) { report = r; };
      lc::CudaGuard guard(options);
      at::Tensor big = at::empty({256, 1024, 1024}, at::TensorOptions().device(at::kCUDA));  // 1 GiB
      big.fill_(1);
      big = at::Tensor();  // freed to the cache, still reserved
      if (throw_inside) throw std::runtime_error("boom");
    } catch (const std::runtime_error&) {
    }
    INFO(report.message);
    CHECK(report.before.reserved >= (1LL << 30));
    CHECK(report.after.reserved < (64LL << 20));
    CHECK(report.synchronized);
  }
}
