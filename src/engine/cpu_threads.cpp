// The CPU threads a process computes with: ATen's kernel choice and intra-op threads, and the
// OpenBLAS pool some libtorch builds bring along.
#include "yolotrain/engine/cpu_threads.hpp"

#include <dlfcn.h>
#include <torch/torch.h>

#include <cstdlib>

namespace yolotrain::engine {

bool prefer_avx512_kernels() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512 || std::getenv("ATEN_CPU_CAPABILITY") != nullptr) return false;
  return setenv("ATEN_CPU_CAPABILITY", "avx512", 0) == 0;
#else
  return false;
#endif
}

namespace {

// OpenBLAS's entry point, looked up in what the process has loaded rather than linked: most
// libtorch builds (pytorch.org's, Debian 12's) carry no OpenBLAS, and yolotrain must not add one.
bool keep_openblas_on_caller() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return false;  // the user's choice stands
  using SetThreads = void (*)(int);
  auto* set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set == nullptr) return false;
  set(1);
  return true;
}

}  // namespace

bool use_cpu_threads(int threads) {
  torch::set_num_threads(threads);
  return keep_openblas_on_caller();
}

}  // namespace yolotrain::engine
