// ONNX export against libtorch on this CPU: per-image latency at batch 1 of the exported graph in
// ONNX Runtime (onnxruntime-node, tests/onnxruntime) and of the same fused model in libtorch eval
// (channels_last, as the Predictor runs it), the export time and the file size.
// Run: build/bench/onnx_bench [model=yolov8n.yaml|PATH] [imgsz=640] [threads=2] [runs=20]
// Prints figures only; the ORT side is skipped (with the reason) when node or the package are missing.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "bench_args.hpp"
#include "onnxruntime_runner.hpp"
#include "yolotrain/engine/trainer.hpp"
#include "yolotrain/export/onnx_export.hpp"
#include "yolotrain/io/model_weights.hpp"
#include "yolotrain/nn/detection_model.hpp"
#include "yolotrain/nn/memory_format.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

yolotrain::nn::DetectionModel load(const std::string& model) {
  if (fs::path(model).extension() == ".yaml") {
    at::manual_seed(0);
    return yolotrain::nn::DetectionModel(yolotrain::nn::DetectionModelOptions(model));
  }
  return yolotrain::io::build_model(yolotrain::io::read_model_weights(model), model);
}

}  // namespace

int main(int argc, char** argv) {
  yolotrain::engine::prefer_avx512_kernels();
  std::map<std::string, std::string> a = {
      {"model", "yolov8n.yaml"}, {"imgsz", "640"}, {"threads", "2"}, {"runs", "20"}};
  if (!yolotrain::bench::parse_args("onnx_bench", argc, argv, a)) return 2;
  const int threads = std::stoi(a["threads"]), runs = std::stoi(a["runs"]);
  const std::int64_t imgsz = std::stoll(a["imgsz"]);
  at::set_num_threads(threads);
  auto model = load(a["model"]);
  model->eval();
  model->fuse();

  const fs::path dir = fs::temp_directory_path() / ("onnx_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "model.onnx";
  yolotrain::exporter::OnnxExportOptions o;
  o.imgsz_h = o.imgsz_w = imgsz;
  const auto t0 = Clock::now();
  const std::string bytes = yolotrain::exporter::onnx_model(*model, o, {"bench", "", model->names()});
  const double export_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("model %s, imgsz %lld, batch 1, %d threads: ONNX file %.2f MB, built in %.0f ms\n", a["model"].c_str(),
              static_cast<long long>(imgsz), threads, static_cast<double>(bytes.size()) / 1e6, export_ms);

  const at::Tensor x = at::rand({1, 3, imgsz, imgsz});
  {
    c10::InferenceMode guard;
    const auto format = yolotrain::nn::preferred_cpu_memory_format();
    yolotrain::nn::set_memory_format(*model, format);
    const at::Tensor xf = x.contiguous(format);
    model->predict(xf);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto t = Clock::now();
      model->predict(xf);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    }
    std::printf("libtorch eval (fused):   median %.1f ms, min %.1f ms over %d runs\n", median(ms),
                *std::min_element(ms.begin(), ms.end()), runs);
  }
  if (auto why = yolotrain::testing::onnxruntime_missing()) {
    std::printf("ONNX Runtime: skipped, %s\n", why->c_str());
  } else {
    setenv("ORT_THREADS", std::to_string(threads).c_str(), 1);
    auto r = yolotrain::testing::run_onnxruntime(path, x, dir, runs + 1);
    r.ms.erase(r.ms.begin());  // the first run initialises the session's kernels
    std::printf("ONNX Runtime (node, CPU): median %.1f ms, min %.1f ms over %d runs\n", median(r.ms),
                *std::min_element(r.ms.begin(), r.ms.end()), runs);
  }
  fs::remove_all(dir);
  return 0;
}
