// Prints the cost of the v8 loss (forward + backward, yolov8n-shaped outputs at 640 px, batch 16,
// nc 80) for 0, 10 and 100 boxes per image, of NMS for 300 and 30,000 candidates, and of the rotated
// NMS (OBB) for 1,000 and 3,000.
// Figures only; nothing here asserts a time. Run: build/bench/loss_bench [threads] [TRACE.json]
// With a trace file, one more forward + backward per box count is recorded there by libtorch's
// profiler (chrome://tracing format: where the loss spends its time, operator by operator).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "yolotrain/engine/cpu_threads.hpp"
#include "yolotrain/loss.hpp"
#include "yolotrain/metrics.hpp"

namespace yl = yolotrain::loss;
namespace ym = yolotrain::metrics;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr int64_t kBatch = 16, kNc = 80, kNo = 64 + kNc;

std::vector<at::Tensor> yolov8n_outputs() {
  std::vector<at::Tensor> feats;
  for (int64_t s : {8, 16, 32}) feats.push_back(at::randn({kBatch, kNo, 640 / s, 640 / s}).requires_grad_());
  return feats;
}

yl::Targets random_targets(int64_t per_image) {
  const int64_t n = kBatch * per_image;
  const at::Tensor idx = at::arange(kBatch, at::kFloat).repeat_interleave(per_image);
  const at::Tensor cls = at::randint(0, kNc, {n, 1}).to(at::kFloat);
  const at::Tensor wh = at::rand({n, 2}) * 0.3 + 0.02;
  const at::Tensor xy = wh / 2 + at::rand({n, 2}) * (1 - wh);
  return {idx, cls, at::cat({xy, wh}, 1)};
}

void bench_loss(int64_t per_image, const char* trace) {
  const yl::DetectionLoss loss(yl::DetectionLossOptions{{8, 16, 32}, kNc, 16});
  auto feats = yolov8n_outputs();
  const yl::Targets t = random_targets(per_image);
  std::vector<double> fwd, total;
  for (int i = 0; i < 4; ++i) {
    for (auto& f : feats) f.mutable_grad() = at::Tensor();
    const auto t0 = Clock::now();
    const yl::LossOutput out = loss(feats, t);
    const double f_ms = ms_since(t0);
    out.total.backward();
    if (i > 0) {  // the first run warms allocator and thread pool
      fwd.push_back(f_ms);
      total.push_back(ms_since(t0));
    }
  }
  std::printf("loss  batch %lld, %3lld boxes/image: forward %8.1f ms, forward+backward %8.1f ms (median of 3)\n",
              static_cast<long long>(kBatch), static_cast<long long>(per_image), median(fwd), median(total));
  if (trace) {
    torch::autograd::profiler::RecordProfile record(std::string(trace) + "." + std::to_string(per_image));
    for (auto& f : feats) f.mutable_grad() = at::Tensor();
    loss(feats, t).total.backward();
  }
}

// [1, 4 + nc, A] predictions where exactly `n` (box, class) pairs score above 0.001.
at::Tensor nms_input(int64_t n) {
  const at::Tensor xy = at::rand({n, 2}) * 640;
  const at::Tensor wh = at::rand({n, 2}) * 120 + 8;
  at::Tensor scores = at::zeros({n, kNc});
  scores.scatter_(1, at::randint(0, kNc, {n, 1}), at::rand({n, 1}) * 0.9 + 0.05);
  return at::cat({xy, wh, scores}, 1).t().unsqueeze(0).contiguous();
}

void bench_nms(int64_t n) {
  const at::Tensor pred = nms_input(n);
  ym::NmsOptions o;
  o.conf = 0.001;
  o.iou = 0.7;
  o.multi_label = true;
  std::vector<double> ms;
  int64_t kept = 0;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    kept = ym::non_max_suppression(pred, o)[0].size(0);
    if (i > 0) ms.push_back(ms_since(t0));
  }
  std::printf("nms   %6lld candidates (80 classes, conf 0.001, iou 0.7): %8.2f ms (median of 3), %lld kept\n",
              static_cast<long long>(n), median(ms), static_cast<long long>(kept));
}

// Ultralytics' rotated NMS (fast NMS over ProbIoU) of `n` oriented boxes of one image.
void bench_nms_rotated(int64_t n) {
  const at::Tensor boxes = at::cat({at::rand({n, 2}) * 640, at::rand({n, 2}) * 120 + 8,
                                    (at::rand({n, 1}) - 0.25) * 3.14159265},
                                   1);
  const at::Tensor scores = at::rand({n});
  std::vector<double> ms;
  int64_t kept = 0;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = Clock::now();
    kept = ym::nms_rotated(boxes, scores, 0.7).size(0);
    if (i > 0) ms.push_back(ms_since(t0));
  }
  std::printf("rotated nms %6lld candidates (iou 0.7): %8.2f ms (median of 3), %lld kept\n",
              static_cast<long long>(n), median(ms), static_cast<long long>(kept));
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  yolotrain::engine::use_cpu_threads(threads);  // as yolo_train does
  at::manual_seed(0);
  std::printf("threads %d\n", at::get_num_threads());
  const char* trace = argc > 2 ? argv[2] : nullptr;
  for (int64_t per_image : {0, 10, 100}) bench_loss(per_image, trace);
  for (int64_t n : {300, 30000}) bench_nms(n);
  for (int64_t n : {1000, 3000}) bench_nms_rotated(n);
  return 0;
}
