#pragma once

// Runs an ONNX model in ONNX Runtime through node and run_onnx.js (onnxruntime-node from npm,
// installed by scripts/install-deps.sh into tests/onnxruntime/node_modules). For the export
// tests and bench/onnx_bench; header-only, so both compile it without another library.

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace yolotrain::testing {

/// The folder with run_onnx.js and node_modules (a compile definition of the test and bench).
inline std::filesystem::path onnxruntime_dir() { return YOLOTRAIN_ONNXRUNTIME_DIR; }

/// Why ONNX Runtime cannot run here (node or the package missing), or nothing when it can.
inline std::optional<std::string> onnxruntime_missing() {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed (apt-get install nodejs)";
  if (!std::filesystem::exists(onnxruntime_dir() / "node_modules" / "onnxruntime-node")) {
    return "onnxruntime-node is not installed (npm ci --ignore-scripts --prefix " + onnxruntime_dir().string() + ")";
  }
  return std::nullopt;
}

/// What one run_onnx.js call returned.
struct OnnxRuntimeResult {
  at::Tensor output;       ///< the first output, float32
  std::vector<at::Tensor> outputs;  ///< every output in the graph's order (outputs[0] is `output`)
  std::vector<std::string> output_names;
  std::vector<double> ms;  ///< milliseconds of each session.run
  std::string output_name, input_name;
};

/// Runs `model` on `input` (float32, NCHW) `repeats` times; files go to `work`. Throws
/// std::runtime_error with node's message when the run fails.
inline OnnxRuntimeResult run_onnxruntime(const std::filesystem::path& model, const at::Tensor& input,
                                         const std::filesystem::path& work, int repeats = 1) {
  const at::Tensor x = input.to(at::kFloat).contiguous();
  const auto in = work / "ort_input.bin", out = work / "ort_output.bin", err = work / "ort_stderr.txt";
  std::ofstream(in, std::ios::binary)
      .write(static_cast<const char*>(x.data_ptr()), static_cast<std::streamsize>(x.nbytes()));
  std::string dims;
  for (auto d : x.sizes()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  const std::string cmd = "node '" + (onnxruntime_dir() / "run_onnx.js").string() + "' '" + model.string() + "' '" +
                          in.string() + "' " + dims + " '" + out.string() + "' " + std::to_string(repeats) + " 2> '" +
                          err.string() + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot start node");
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) text += buf;
  if (pclose(pipe) != 0) {
    std::ifstream e(err);
    throw std::runtime_error("ONNX Runtime failed on " + model.string() + ": " +
                             std::string(std::istreambuf_iterator<char>(e), {}));
  }
  const auto j = nlohmann::json::parse(text);
  OnnxRuntimeResult r;
  r.output_name = j.at("name").get<std::string>();
  r.input_name = j.at("input").get<std::string>();
  r.ms = j.at("ms").get<std::vector<double>>();
  const auto& outputs = j.at("outputs");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    at::Tensor t = at::empty(outputs[i].at("dims").get<std::vector<std::int64_t>>(), at::kFloat);
    std::ifstream o(i == 0 ? out : std::filesystem::path(out.string() + "." + std::to_string(i)), std::ios::binary);
    o.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    if (!o) throw std::runtime_error("ONNX Runtime wrote a short output for " + model.string());
    r.outputs.push_back(t);
    r.output_names.push_back(outputs[i].at("name").get<std::string>());
  }
  r.output = r.outputs.at(0);
  return r;
}

}  // namespace yolotrain::testing
