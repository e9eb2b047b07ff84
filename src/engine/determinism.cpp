#include "determinism.hpp"

#include <ATen/Context.h>

#include <cstdlib>

namespace yolotrain::engine {

void apply_determinism(bool deterministic) {
  at::globalContext().setDeterministicAlgorithms(deterministic, /*warn_only=*/true);
  at::globalContext().setDeterministicCuDNN(deterministic);
  // cuDNN's benchmark mode times the convolution algorithms once per shape and keeps the fastest:
  // faster steps on CUDA, but the choice can differ between processes, so a resumed run would not
  // repeat the original's numbers. Only where repeatability was not asked for (no effect on the CPU).
  at::globalContext().setBenchmarkCuDNN(!deterministic);
  if (deterministic) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
}

}  // namespace yolotrain::engine
