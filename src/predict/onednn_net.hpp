#pragma once
// The fused detection network run by oneDNN primitives directly, for CPU inference (docs/predict.md,
// "The oneDNN forward"). libtorch 1.13 runs every convolution through oneDNN too, but converts each
// activation from and to NCHW around it, runs SiLU, the shortcut additions and the concatenations as
// separate ATen ops and reorders the weights on every call. Here the whole network stays in oneDNN's
// blocked layout, SiLU and the Bottleneck shortcut are post-ops of their convolution, the weights are
// reordered once, and only the Detect outputs come back to NCHW tensors, which Detect::decode() turns
// into the model's predictions as DetectionModel::predict() does.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::predict::detail {

class OnednnNet {
 public:
  /// The activations' memory layout: the one this CPU's convolutions prefer (oneDNN 2.6: nhwc with
  /// AVX-512, nChw8c with AVX2) — or, where one of the model's layers has only oneDNN's reference
  /// kernel in it, the first other layout (nhwc, nChw8c, nChw16c) with optimised kernels for every
  /// layer — or one chosen (tests run every layout's code on one machine). A chosen layout oneDNN
  /// would run with its reference kernel (nChw16c without AVX-512) is refused.
  enum class Layout { Preferred, Blocked8, Blocked16, Nhwc };

  /// A network for `model` (fused, float32, on the CPU), or nullptr with `why` saying what it has
  /// that this path does not run (the caller then uses the model's own forward). `bf16`: weights and
  /// activations in bfloat16 (inputs and Detect's outputs stay float32), refused on a CPU without
  /// native bfloat16 (oneDNN would emulate it, slower than float32). The weights are read once (on
  /// each tensor's first use): change them and compile again.
  static std::unique_ptr<OnednnNet> compile(const nn::DetectionModel& model, std::string& why,
                                            Layout layout = Layout::Preferred, bool bf16 = false);
  ~OnednnNet();

  /// Whether this CPU computes bfloat16 natively (AVX-512 BF16 or AMX), as oneDNN sees it.
  static bool native_bf16();

  /// "oneDNN nChw16c", "oneDNN nhwc bf16", ...: the layout and data type it runs in.
  std::string label() const;

  /// = model->predict(x) to float rounding: x [B, 3, H, W] float32 on the CPU, H and W multiples of
  /// the largest stride. Runs the images of a batch one after the other; the primitives for an
  /// (H, W) are built on its first call and kept (up to 48 sizes, then the least recently used
  /// goes). Not thread-safe: one call at a time.
  at::Tensor predict(const at::Tensor& x);

  /// How many input sizes have their primitives built.
  std::size_t plans() const;
  /// Bytes of the activations' arena (the largest plan's; plans share it).
  std::size_t activation_bytes() const;

 private:
  struct Impl;
  explicit OnednnNet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolotrain::predict::detail
