#pragma once

namespace yolotrain::engine {

/// Lets ATen use its AVX-512 kernels where the CPU has them (libtorch 1.13 defaults to AVX2 for
/// its own kernels: BatchNorm, SiLU, the loss's elementwise work; a yolov8n training step at imgsz
/// 320 went from 11.1 to 11.6 images/s on a quiet machine here). ATen reads the choice once, at its first CPU
/// kernel, so call this first thing in main(); it does nothing when ATEN_CPU_CAPABILITY is set
/// already or the CPU lacks AVX-512. Returns whether it set it.
bool prefer_avx512_kernels();

/// The CPU threads a run computes with: `threads` intra-op threads for libtorch
/// (torch::set_num_threads), and OpenBLAS, when the libtorch in the process links it (Debian 13's
/// does; Debian 12's and pytorch.org's use MKL or none), kept to the calling thread unless
/// OPENBLAS_NUM_THREADS says otherwise: its own pthread pool, sized to every core, otherwise
/// competes with libtorch's OpenMP threads for the same cores (a 2-core machine here predicted up
/// to 40 % slower and trained 12 % slower with it; docs/performance.md). Training, validation and
/// predict call it; a custom loop may. Returns whether it set OpenBLAS's threads.
bool use_cpu_threads(int threads);

}  // namespace yolotrain::engine
