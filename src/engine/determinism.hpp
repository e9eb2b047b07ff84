#pragma once
// deterministic=: what Ultralytics' init_seeds(seed, deterministic) sets (utils/torch_utils.py,
// 8.4.117), applied at the start of each run.
namespace yolotrain::engine {

/// True: torch's deterministic algorithms (an operation without a deterministic kernel warns once
/// instead of failing: `warn_only`, as Ultralytics asks), cuDNN's deterministic convolutions, and
/// CUBLAS_WORKSPACE_CONFIG=:4096:8 (cuBLAS repeats its reductions only with a fixed workspace;
/// read when the first cuBLAS handle is made, so before the run's first CUDA matrix product).
/// A value the environment already holds is kept. False: the two torch switches off again (a
/// program running several trainers gets what each asks for); the environment is left as it is.
/// cuDNN's benchmark mode follows the opposite: on only under false (its algorithm choice can
/// differ between processes: a resumed run would not repeat the first's numbers).
void apply_determinism(bool deterministic);

}  // namespace yolotrain::engine
