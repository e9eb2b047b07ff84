#include "cpu_forward.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>

#include "yolotrain/error.hpp"

namespace yolotrain::predict::detail {

CpuForward parse_cpu_forward(const std::string& value) {
  using L = OnednnNet::Layout;
  if (value == "auto") return auto_cpu_forward();
  if (value == "libtorch") return {false, L::Preferred, false};
  // onednn[-LAYOUT][-bf16]
  CpuForward f;
  std::string rest = value;
  const std::string bf16 = "-bf16";
  if (rest.size() > bf16.size() && rest.compare(rest.size() - bf16.size(), bf16.size(), bf16) == 0) {
    f.bf16 = true;
    rest.resize(rest.size() - bf16.size());
  }
  const std::map<std::string, L> layouts{{"onednn", L::Preferred},
                                         {"onednn-nchw16c", L::Blocked16},
                                         {"onednn-nchw8c", L::Blocked8},
                                         {"onednn-nhwc", L::Nhwc}};
  const auto it = layouts.find(rest);
  if (it == layouts.end()) {
    throw ConfigError("forward='" + value +
                      "' is not a forward; expected auto, libtorch, or onednn[-nchw16c|-nchw8c|-nhwc][-bf16] "
                      "(e.g. onednn, onednn-nhwc, onednn-bf16)");
  }
  f.layout = it->second;
  return f;
}

CpuForward auto_cpu_forward() {
  // Measured (docs/predict.md, predict_bench, medians of 5 interleaved rounds): with AVX-512
  // (avx512_core_bf16) the oneDNN forward in its preferred layout (nhwc) took 0.69-0.82x libtorch's
  // time, nChw16c within 4 % of it; with oneDNN limited to AVX2 (preferred layout nChw8c)
  // 0.78-0.83x. Below AVX2 oneDNN has reference kernels only for much of the network (refused by
  // the plan anyway) and nothing was measured: libtorch's forward.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx2 = static_cast<unsigned>(dnnl::cpu_isa::avx2);
  if ((isa & avx2) == avx2) return {true, OnednnNet::Layout::Preferred, false};
  return {false, OnednnNet::Layout::Preferred, false};
}

std::string cpu_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace yolotrain::predict::detail
