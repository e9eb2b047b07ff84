#pragma once
// Which forward a Predictor runs on the CPU: PredictOptions::forward parsed, and the rule behind
// "auto" (docs/predict.md, "Which forward runs on the CPU").
#include <string>

#include "onednn_net.hpp"

namespace yolotrain::predict::detail {

struct CpuForward {
  bool onednn = true;  ///< false: libtorch's forward (the model's own)
  OnednnNet::Layout layout = OnednnNet::Layout::Preferred;
  bool bf16 = false;
};

/// PredictOptions::forward's values: "auto", "libtorch", or "onednn[-nchw16c|-nchw8c|-nhwc][-bf16]".
/// Throws ConfigError naming them for anything else.
CpuForward parse_cpu_forward(const std::string& value);

/// What "auto" runs on this CPU: a rule over its instruction set as oneDNN sees it (so the same
/// on every run of one machine), from the measurements in docs/predict.md.
CpuForward auto_cpu_forward();

/// The instruction set oneDNN dispatches to here: "avx512_core_bf16", "avx2", ...
std::string cpu_isa_name();

}  // namespace yolotrain::predict::detail
