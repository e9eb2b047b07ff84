// deterministic=: the switches Ultralytics' init_seeds(seed, deterministic) sets.
#include <ATen/Context.h>

#include "determinism.hpp"

#include "catch.hpp"

#include <cstdlib>
#include <string>

using yolotrain::engine::apply_determinism;

TEST_CASE("deterministic=true sets deterministic algorithms, cuDNN's, cuBLAS' workspace, false cuDNN's benchmark",
          "[engine]") {
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
  apply_determinism(true);
  CHECK(at::globalContext().deterministicAlgorithms());
  CHECK(at::globalContext().deterministicAlgorithmsWarnOnly());  // warn, never fail, as Ultralytics asks
  CHECK(at::globalContext().deterministicCuDNN());
  CHECK_FALSE(at::globalContext().benchmarkCuDNN());  // its algorithm choice may differ in a resumed process
  REQUIRE(std::getenv("CUBLAS_WORKSPACE_CONFIG") != nullptr);
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":4096:8");

  apply_determinism(false);  // a second run in the same program asks for the opposite
  CHECK_FALSE(at::globalContext().deterministicAlgorithms());
  CHECK_FALSE(at::globalContext().deterministicCuDNN());
  CHECK(at::globalContext().benchmarkCuDNN());  // the fastest convolutions on CUDA
}

TEST_CASE("deterministic=true keeps a cuBLAS workspace the environment already sets", "[engine]") {
  setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  apply_determinism(true);
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":16:8");
  apply_determinism(false);
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":16:8");
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
}
