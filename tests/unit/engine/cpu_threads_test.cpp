// use_cpu_threads: libtorch's intra-op threads, and OpenBLAS kept to the calling thread where the
// libtorch in the process links it (Debian's do: libblas.so.3 or libopenblas.so.0).
#include <ATen/Parallel.h>
#include <dlfcn.h>

#include "yolotrain/engine/cpu_threads.hpp"

#include "catch.hpp"

#include <cstdlib>

namespace {
// OpenBLAS' own count, or -1 when the process carries no OpenBLAS.
int openblas_threads() {
  using GetThreads = int (*)();
  auto* get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get != nullptr ? get() : -1;
}
void set_openblas_threads(int n) {
  using SetThreads = void (*)(int);
  if (auto* set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
}
}  // namespace

TEST_CASE("use_cpu_threads sets libtorch's threads and keeps OpenBLAS on the caller", "[engine]") {
  unsetenv("OPENBLAS_NUM_THREADS");
  const bool has_openblas = openblas_threads() != -1;
  const bool set = yolotrain::engine::use_cpu_threads(2);
  CHECK(at::get_num_threads() == 2);
  CHECK(set == has_openblas);
  if (!has_openblas) WARN("this libtorch carries no OpenBLAS: only libtorch's threads were set");
  if (has_openblas) CHECK(openblas_threads() == 1);
  yolotrain::engine::use_cpu_threads(1);
  CHECK(at::get_num_threads() == 1);
}

TEST_CASE("use_cpu_threads leaves OpenBLAS alone when OPENBLAS_NUM_THREADS is set", "[engine]") {
  setenv("OPENBLAS_NUM_THREADS", "2", 1);
  set_openblas_threads(2);  // as OpenBLAS read it at load
  CHECK_FALSE(yolotrain::engine::use_cpu_threads(2));
  CHECK(at::get_num_threads() == 2);
  if (openblas_threads() != -1) CHECK(openblas_threads() == 2);
  unsetenv("OPENBLAS_NUM_THREADS");
}
