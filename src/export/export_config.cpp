#include "yolotrain/export/export_config.hpp"

#include <chrono>
#include <cstdio>

#include "../engine/arg_values.hpp"
#include "yolotrain/export/safetensors_export.hpp"

namespace yolotrain::exporter {
namespace fs = std::filesystem;

namespace {

using namespace engine::args;  // NOLINT: the value parsers
using C = ExportConfig;

const ArgTable<C>& args_table() {
  static const ArgTable<C> table = {
      {"model",
       {"", "weights: .pt (Ultralytics), .ytckpt or .safetensors", [](C& c, const std::string& v) { c.model = v; }}},
      {"format",
       {"safetensors", "safetensors or onnx",
        [](C& c, const std::string& v) {
          if (v != "safetensors" && v != "onnx") bad("format", v, "expected safetensors or onnx");
          c.format = v;
        }}},
      {"imgsz",
       {"640", "ONNX input size: N, or H,W (rounded up to multiples of the stride)",
        [](C& c, const std::string& v) {
          const auto hw = int_list("imgsz", v);
          if (hw.size() > 2 || hw[0] < 1 || hw.back() < 1) bad("imgsz", v, "expected N or H,W, positive");
          c.onnx.imgsz_h = hw[0];
          c.onnx.imgsz_w = hw.back();
        }}},
      {"batch",
       {"1", "ONNX input batch", [](C& c, const std::string& v) { c.onnx.batch = to_int("batch", v, 1, 1024); }}},
      {"dynamic",
       {"false", "ONNX: batch, height and width as symbolic axes",
        [](C& c, const std::string& v) { c.onnx.dynamic = to_bool("dynamic", v); }}},
      {"opset",
       {"17", "ONNX opset (12 to 17)",
        [](C& c, const std::string& v) { c.onnx.opset = static_cast<int>(to_int("opset", v, 12, 17)); }}},
      {"half",
       {"false", "float16 (not on the CPU: exports float32 with a warning)",
        [](C& c, const std::string& v) { c.onnx.half = to_bool("half", v); }}},
      {"end2end",
       {"true", "ONNX of an end-to-end head (YOLO26): (N, 300, 6) top-k; false: the NMS head's output",
        [](C& c, const std::string& v) { c.onnx.end2end = to_bool("end2end", v); }}},
  };
  return table;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ExportConfig ExportConfig::from_args(const std::vector<std::string>& args) {
  ExportConfig cfg;
  apply("export", args_table(), args, cfg);
  if (cfg.model.empty()) throw ConfigError("export needs model=WEIGHTS (.ytckpt, .pt or .safetensors)");
  return cfg;
}

std::vector<std::array<std::string, 3>> ExportConfig::describe() { return engine::args::describe(args_table()); }

fs::path export_path(const fs::path& weights, const std::string& format) {
  fs::path out = fs::path(weights).replace_extension("." + format);
  if (out == weights) out.replace_extension(".export." + format);
  return out;
}

fs::path run_export(const ExportConfig& config) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path out = export_path(config.model, config.format);
  if (config.format == "safetensors") {
    export_safetensors(config.model, out);
    std::printf("exported %s\n", out.c_str());
    return out;
  }
  const auto& o = config.onnx;
  std::printf("ONNX: starting export from '%s' with opset %d, input (%lld, 3, %lld, %lld)%s...\n", config.model.c_str(),
              o.opset, static_cast<long long>(o.batch), static_cast<long long>(o.imgsz_h),
              static_cast<long long>(o.imgsz_w), o.dynamic ? ", dynamic batch, height and width" : "");
  std::fflush(stdout);
  const OnnxExportReport r = export_onnx(config.model, out, config.onnx);
  std::printf("ONNX: export success %.1fs, saved as '%s' (%.1f MB), input images (%lld, 3, %lld, %lld)\n",
              seconds_since(t0), out.c_str(), static_cast<double>(r.bytes) / 1e6, static_cast<long long>(o.batch),
              static_cast<long long>(r.imgsz_h), static_cast<long long>(r.imgsz_w));
  return out;
}

}  // namespace yolotrain::exporter
