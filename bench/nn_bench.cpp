// Forward+backward images/s of a DetectionModel on this CPU, contiguous vs channels_last.
// Run: build/bench/nn_bench [model=yolov8n.yaml] [batch=8] [iters=3] [threads=2] [sizes=320,640]
// Prints figures only; it asserts nothing.
#include <ATen/ATen.h>

#include "yolotrain/engine/cpu_threads.hpp"

#include "yolotrain/nn.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace nn = yolotrain::nn;

namespace {

double step_seconds(nn::DetectionModel& model, const at::Tensor& x) {
  const auto t0 = std::chrono::steady_clock::now();
  model->zero_grad();
  at::Tensor loss = at::zeros({});
  for (const auto& o : model->forward(x)) loss = loss + o.to(at::kFloat).mean();
  loss.backward();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "yolov8n.yaml";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 8;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 3;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  std::vector<int64_t> sizes;
  std::stringstream ss(argc > 5 ? argv[5] : "320,640");
  for (std::string s; std::getline(ss, s, ',');) sizes.push_back(std::stoll(s));

  yolotrain::engine::use_cpu_threads(threads);  // as yolo_train does
  nn::DetectionModel model{nn::DetectionModelOptions(name)};
  model->train();
  std::printf("%s\n", nn::summarize(*model).to_string().c_str());
  std::printf("threads %d (torch reports %d), batch %lld, %d timed steps after 1 warm-up\n", threads,
              at::get_num_threads(), static_cast<long long>(batch), iters);
  for (const int64_t size : sizes) {
    for (const auto format : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast}) {
      nn::set_memory_format(*model, format);
      const at::Tensor x = at::rand({batch, 3, size, size}).contiguous(format);
      step_seconds(model, x);  // warm-up (oneDNN primitive creation)
      double total = 0;
      for (int i = 0; i < iters; ++i) total += step_seconds(model, x);
      std::printf("imgsz %4lld %-14s %7.2f images/s  (%.3f s/step)\n", static_cast<long long>(size),
                  format == at::MemoryFormat::ChannelsLast ? "channels_last" : "contiguous",
                  static_cast<double>(batch) * iters / total, total / iters);
      std::fflush(stdout);
    }
  }
  return 0;
}
