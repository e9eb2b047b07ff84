#include "determinism.hpp"

#include <ATen/Context.h>

#include <cstdlib>

namespace yolotrain::engine {

void apply_determinism(bool deterministic) {
  at::globalContext().setDeterministicAlgorithms(deterministic, /*warn_only=*/true);
  at::globalContext().setDeterministicCuDNN(deterministic);
  if (deterministic) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
}

}  // namespace yolotrain::engine
