// The training step alone, on one collated batch already on the device (no loader, no trainer):
// the model-bound ceiling the trainer's images per second are measured against, eagerly and as a
// CUDA graph's replay (engine::GraphedStep, as cuda_graph= uses it). A step: forward (amp=), the
// device step's loss (E2ELoss for an end-to-end head), backward, the scaler's unscale, clipping,
// AdamW (the fused kernels with found_inf on CUDA, libtorch 2.4+), the gradients dropped — the
// trainer's step without its loader, EMA, tally and progress line.
// Figures per configuration: images per second by the host's clock, and on CUDA the GPU's time per
// step from CUDA events around the timed steps (for a replay that is the GPU's own work, so
// "GPU busy" = the replay's GPU time over the mode's wall time; an eager step's events span the
// gaps in which the GPU waited for the host).
// Run: build/bench/step_bench [models=yolov8n.yaml,yolo11n.yaml,yolo26n.yaml] [batches=16,64]
//      [imgsz=640] [amps=false,true] [modes=eager,graph] [steps=30] [warmup=5] [device=cuda]
//      [data=<shared>/datasets/coco128/data.yaml]
// On a CPU (device=cpu: the rehearsal) the graph mode is skipped, saying so. Prints figures only.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "foreach_optimizers.hpp"
#include "graphed_step.hpp"
#include "mixed_precision.hpp"
#include "multi_tensor.hpp"
#include "optimizer.hpp"
#include "yolotrain/data/data_config.hpp"
#include "yolotrain/data/dataset.hpp"
#include "yolotrain/data/loader.hpp"
#include "yolotrain/engine/cpu_threads.hpp"
#include "yolotrain/lifecycle/memory/host_memory.hpp"
#include "yolotrain/loss/e2e_loss.hpp"
#include "yolotrain/nn.hpp"
#include "yolotrain/nn/memory_format.hpp"

#if YOLOTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace en = yolotrain::engine;
namespace yd = yolotrain::data;
namespace yl = yolotrain::loss;
namespace nn = yolotrain::nn;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string model, amp, mode;
  int batch = 16, imgsz = 640, steps = 30, warmup = 5;
  torch::Device device{torch::kCUDA};
};

struct Figures {
  double wall_ms = 0;  // host clock per step
  double gpu_ms = -1;  // CUDA events per step (-1: not on CUDA)
};

// The first training batch of the set (default augmentation), its loss fields on the device.
struct DeviceBatch {
  at::Tensor img;
  yd::Batch fields;
};

DeviceBatch first_batch(const yd::DataConfig& data, const Config& c) {
  yd::LoaderOptions o;
  o.batch = c.batch, o.imgsz = c.imgsz, o.workers = 2;
  yd::Loader loader(yd::load_split(data, "train"), o);
  const std::optional<yd::Batch> b = loader.next();
  DeviceBatch d;
  d.img = yd::preprocess_images(b->img, c.device);
  d.fields.batch_idx = b->batch_idx.to(c.device);
  d.fields.cls = b->cls.to(c.device);
  d.fields.bboxes = b->bboxes.to(c.device);
  d.fields.targets = b->targets.to(c.device);
  return d;
}

// One configuration's timed steps after its warm-up.
Figures measure(const Config& c, const yd::DataConfig& data) {
  at::manual_seed(0);
  nn::DetectionModel model(nn::DetectionModelOptions(c.model).nc(data.nc()));
  model->to(c.device);
  const c10::MemoryFormat format =
      c.device.is_cuda() ? c10::MemoryFormat::ChannelsLast : nn::preferred_cpu_memory_format();
  nn::set_memory_format(*model, format);
  model->train();
  yl::DetectionLossOptions options = yl::DetectionLossOptions::of(model);
  options.stal = true;  // 8.4's recipe
  options.device_step = true;
  const yl::DetectionLoss v8(options);
  const yl::E2ELoss e2e(options, {}, 100);
  const bool end2end = model->head()->end2end();
  std::vector<at::Tensor> params = model->parameters();
  en::ForeachAdamW optimizer(params, torch::optim::AdamWOptions(0.001).weight_decay(5e-4));
  const en::AmpMode amp = en::amp_mode(c.amp, c.device);
  en::GradScaler scaler(amp == en::AmpMode::Fp16Scaled);
  DeviceBatch batch = first_batch(data, c);
  batch.img = batch.img.contiguous(format);
  const en::GraphedStep::Step forward_and_loss = [&](const at::Tensor& x, const yd::Batch& b) {
    nn::HeadOutputs h;
    {
      en::AutocastScope autocast(amp, c.device);
      h = model->forward_heads(x);
    }
    for (auto* level : {&h.one2many, &h.one2one}) {
      for (at::Tensor& f : *level) f = f.to(at::kFloat);
    }
    const yl::Targets t{b.batch_idx, b.cls, b.bboxes, b.targets};
    const yl::LossOutput out = end2end ? e2e(h.one2many, h.one2one, t) : v8(h.one2many, t);
    return en::GraphedStep::Output{scaler.scale(out.total), out.items};
  };
  en::GraphedStep graphed(params, /*eager_steps=*/2);
  const auto step = [&] {
    if (c.mode == "graph") {
      graphed.run(batch.img, batch.fields, forward_and_loss);
    } else {
      forward_and_loss(batch.img, batch.fields).to_backward.backward();
    }
    std::vector<at::Tensor> grads = en::defined_grads(params);
    const at::Tensor found_inf = scaler.unscale(grads);
    const at::Tensor norm = en::clip_grad_norm(grads, 10.0);
    en::step_unless_nonfinite(optimizer, found_inf, norm);
    scaler.update(found_inf);
    en::drop_grads(params);
  };
  for (int i = 0; i < c.warmup; ++i) step();
  if (c.mode == "graph" && !graphed.disabled().empty()) throw std::runtime_error(graphed.disabled());
  Figures f;
#if YOLOTRAIN_WITH_CUDA
  if (c.device.is_cuda()) {
    torch::cuda::synchronize();
    at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
    const auto t0 = Clock::now();
    start.record(c10::cuda::getCurrentCUDAStream());
    for (int i = 0; i < c.steps; ++i) step();
    end.record(c10::cuda::getCurrentCUDAStream());
    end.synchronize();
    f.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / c.steps;
    f.gpu_ms = start.elapsed_time(end) / c.steps;
    return f;
  }
#endif
  const auto t0 = Clock::now();
  for (int i = 0; i < c.steps; ++i) step();
  f.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / c.steps;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args = {
      {"models", "yolov8n.yaml,yolo11n.yaml,yolo26n.yaml"},
      {"batches", "16,64"},
      {"imgsz", "640"},
      {"amps", "false,true"},
      {"modes", "eager,graph"},
      {"steps", "30"},
      {"warmup", "5"},
      {"device", "cuda"},
      {"data", YOLOTRAIN_SHARED_DIR "/datasets/coco128/data.yaml"}};
  if (!yolotrain::bench::parse_args("step_bench", argc, argv, args)) return 2;
  en::prefer_avx512_kernels();  // as yolo_train does
  yolotrain::lifecycle::keep_freed_host_memory();  // as the trainer does: no page faults a step
  const yd::DataConfig data = yd::load_data_yaml(args["data"]);
  const torch::Device device(args["device"]);
  std::printf("step_bench: one batch of %s on %s, imgsz %s, %s steps after %s (a step: forward, loss, backward, "
              "AdamW)\n",
              args["data"].c_str(), device.str().c_str(), args["imgsz"].c_str(), args["steps"].c_str(),
              args["warmup"].c_str());
  int rc = 0;
  for (const std::string& model : yolotrain::bench::split_list(args["models"])) {
    for (const std::string& batch : yolotrain::bench::split_list(args["batches"])) {
      for (const std::string& amp : yolotrain::bench::split_list(args["amps"])) {
        std::map<std::string, Figures> by_mode;
        for (const std::string& mode : yolotrain::bench::split_list(args["modes"])) {
          Config c{model, amp, mode, std::stoi(batch), std::stoi(args["imgsz"]), std::stoi(args["steps"]),
                   std::stoi(args["warmup"]), device};
          const std::string name = model + " batch " + batch + " amp=" + amp + " " + mode;
          if (mode == "graph" && !device.is_cuda()) {
            std::printf("%s: skipped (CUDA graphs need a CUDA device)\n", name.c_str());
            continue;
          }
          try {
            const Figures f = by_mode[mode] = measure(c, data);
            std::printf("%s: %.1f img/s, %.2f ms a step by the host's clock", name.c_str(),
                        1000.0 * c.batch / f.wall_ms, f.wall_ms);
            if (f.gpu_ms >= 0) std::printf(", %.2f ms by CUDA events", f.gpu_ms);
            std::printf("\n");
          } catch (const std::exception& e) {
            std::printf("%s: failed: %s\n", name.c_str(), e.what());
            rc = 1;
          }
          std::fflush(stdout);
        }
        if (by_mode.count("eager") && by_mode.count("graph") && by_mode["graph"].gpu_ms > 0) {
          std::printf("  %s batch %s amp=%s: graph/eager %.2fx; GPU busy %.0f %% eager, %.0f %% graph\n",
                      model.c_str(), batch.c_str(), amp.c_str(), by_mode["eager"].wall_ms / by_mode["graph"].wall_ms,
                      100.0 * std::min(1.0, by_mode["graph"].gpu_ms / by_mode["eager"].wall_ms),
                      100.0 * std::min(1.0, by_mode["graph"].gpu_ms / by_mode["graph"].wall_ms));
        }
      }
    }
  }
  return rc;
}
