// The trainer's CUDA paths against their CPU counterparts. Each test skips with a message where no
// CUDA device can be used (every CI machine); scripts/gpu/check.sh runs them on a lent GPU.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/cuda.h>

#include "foreach_optimizers.hpp"
#include "graphed_step.hpp"
#include "mixed_precision.hpp"
#include "test_support.hpp"
#include "training_memory_probe.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/memory/cuda_guard.hpp"
#include "yolotrain/loss/detection_loss.hpp"
#include "yolotrain/nn/detection_model.hpp"

#include "catch.hpp"

#include <cmath>

#if YOLOTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace en = yolotrain::engine;
namespace lc = yolotrain::lifecycle;
namespace nn = yolotrain::nn;

namespace {

bool skip_without_cuda() {
  const auto why = yolotrain::test::cuda_missing();
  if (why) WARN(*why);
  return why.has_value();
}

const torch::Device kCuda(torch::kCUDA, 0);

double max_rel_diff(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.detach().to(at::kCPU, at::kDouble), y = b.detach().to(at::kCPU, at::kDouble);
  return ((x - y).abs().max() / y.abs().max().clamp_min(1e-12)).item<double>();
}

yolotrain::loss::Targets some_targets() {
  yolotrain::loss::Targets t;
  t.batch_idx = at::tensor({0.f, 0.f, 1.f, 1.f, 1.f});
  t.cls = at::tensor({0.f, 2.f, 1.f, 0.f, 2.f}).view({5, 1});
  t.bboxes = at::tensor({0.30f, 0.40f, 0.20f, 0.30f, 0.70f, 0.60f, 0.25f, 0.20f, 0.50f, 0.50f,
                         0.60f, 0.70f, 0.20f, 0.80f, 0.10f, 0.10f, 0.85f, 0.25f, 0.08f, 0.12f})
                  .view({5, 4});
  return t;
}

}  // namespace

TEST_CASE("the gradient scaler's fused CUDA unscale equals the CPU one and finds inf", "[engine][cuda]") {
  if (skip_without_cuda()) return;
  at::manual_seed(0);
  std::vector<at::Tensor> cpu, gpu;
  for (int i = 0; i < 3; ++i) {
    at::Tensor p = at::zeros({17, 5}).requires_grad_();
    p.mutable_grad() = at::randn({17, 5}) * 65536.0;
    cpu.push_back(p);
    at::Tensor q = p.detach().to(kCuda).requires_grad_();
    q.mutable_grad() = p.grad().to(kCuda);
    gpu.push_back(q);
  }
  en::GradScaler on_cpu(true), on_gpu(true);
  auto grads_of = [](const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> g;
    for (const auto& p : params) g.push_back(p.grad());
    return g;
  };
  CHECK(on_cpu.unscale(grads_of(cpu)).item<float>() == 0.0f);
  CHECK(on_gpu.unscale(grads_of(gpu)).item<float>() == 0.0f);
  for (size_t i = 0; i < cpu.size(); ++i) CHECK(max_rel_diff(gpu[i].grad(), cpu[i].grad()) < 1e-6);
  gpu[1].mutable_grad()[3][2] = std::nan("");
  const at::Tensor found_inf = on_gpu.unscale(grads_of(gpu));
  CHECK(found_inf.is_cuda());
  on_gpu.update(found_inf);
  CHECK(found_inf.item<float>() == 1.0f);
  CHECK(on_gpu.read().scale == 32768.0);
  CHECK(on_gpu.read().skipped_steps == 1);
}

TEST_CASE("an fp16 autocast forward on CUDA agrees with the float32 one", "[engine][cuda]") {
  if (skip_without_cuda()) return;
  at::manual_seed(0);
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  model->to(kCuda);
  model->eval();
  at::NoGradGuard no_grad;
  const at::Tensor x = at::rand({2, 3, 128, 128}).to(kCuda);
  const auto fp32 = model->forward(x);
  std::vector<at::Tensor> fp16;
  {
    en::AutocastScope autocast(en::AmpMode::Fp16Scaled, kCuda);
    fp16 = model->forward(x);
  }
  REQUIRE(fp16.size() == fp32.size());
  CHECK(fp16[0].scalar_type() == at::kHalf);
  for (size_t i = 0; i < fp32.size(); ++i) CHECK(max_rel_diff(fp16[i], fp32[i]) < 2e-2);
  // bf16 autocast too (amp=bf16 on CUDA).
  {
    en::AutocastScope autocast(en::AmpMode::Bf16, kCuda);
    const auto bf16 = model->forward(x);
    CHECK(bf16[0].scalar_type() == at::kBFloat16);
    CHECK(max_rel_diff(bf16[0], fp32[0]) < 5e-2);
  }
}

TEST_CASE("the detection loss on CUDA (dense assigner) equals the CPU's (sparse assigner)", "[loss][cuda]") {
  if (skip_without_cuda()) return;
  at::manual_seed(1);
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  const yolotrain::loss::DetectionLoss loss(model);
  const at::Tensor x = at::rand({2, 3, 128, 128});
  const auto feats_cpu = model->forward(x);
  std::vector<at::Tensor> feats_gpu;
  for (const auto& f : feats_cpu) feats_gpu.push_back(f.detach().to(kCuda).requires_grad_());
  const auto targets = some_targets();
  yolotrain::loss::Targets targets_gpu{targets.batch_idx.to(kCuda), targets.cls.to(kCuda), targets.bboxes.to(kCuda)};
  const auto on_cpu = loss(feats_cpu, targets);
  const auto on_gpu = loss(feats_gpu, targets_gpu);
  INFO("CPU items " << on_cpu.items << " CUDA items " << on_gpu.items.cpu());
  CHECK(max_rel_diff(on_gpu.items, on_cpu.items) < 1e-4);
  CHECK(max_rel_diff(on_gpu.total, on_cpu.total) < 1e-4);
  on_gpu.total.backward();
  for (const auto& f : feats_gpu) CHECK(f.grad().defined());
}

TEST_CASE("a host snapshot of CUDA tensors is pinned, equal and reused", "[lifecycle][cuda]") {
  if (skip_without_cuda()) return;
  lc::NamedTensors live{{"w", at::randn({64, 32}).to(kCuda)}, {"b", at::arange(10).to(kCuda)}};
  lc::NamedTensors snap = lc::host_snapshot(live);
  REQUIRE(snap.size() == 2);
  for (size_t i = 0; i < snap.size(); ++i) {
    INFO(snap[i].first);
    CHECK(snap[i].second.device().is_cpu());
    CHECK(snap[i].second.is_pinned());
    CHECK(at::equal(snap[i].second, live[i].second.cpu()));
  }
  const void* w_data = snap[0].second.data_ptr();
  live[0].second.add_(1.0);
  const lc::NamedTensors again = lc::host_snapshot(live, std::move(snap));
  CHECK(again[0].second.data_ptr() == w_data);
  CHECK(at::equal(again[0].second, live[0].second.cpu()));
}

TEST_CASE("AutoBatch's CUDA probe measures memory growing with the batch", "[engine][cuda]") {
  if (skip_without_cuda()) return;
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  model->to(kCuda);
  en::detail::TrainingMemoryProbe probe(model, kCuda, 320, en::AmpMode::Fp16Scaled);
  const en::DeviceMemory memory = probe.memory();
  INFO(memory.name << " total " << memory.total << " GiB");
  CHECK(memory.total > 1.0);
  const auto small = probe.measure(2), large = probe.measure(16);
  REQUIRE(small.has_value());
  REQUIRE(large.has_value());
  INFO("batch 2: " << *small << " GB, batch 16: " << *large << " GB");
  CHECK(*large > *small);
  CHECK(*small > 0.0);
}

TEST_CASE("a run's CUDA device becomes the current one, so the guard's figures are that device's",
          "[lifecycle][cuda]") {
  if (skip_without_cuda()) return;
  const int last = static_cast<int>(torch::cuda::device_count()) - 1;  // cuda:N, N > 0 where there are several
  lc::cuda_set_current_device(last);
  const at::Tensor held = at::ones({1024, 1024}, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(last)));
  const lc::CudaMemory m = lc::cuda_memory();
  CHECK(m.device == last);
  CHECK(m.allocated >= std::int64_t(4) << 20);
  lc::cuda_set_current_device(0);
}

TEST_CASE("the multi-tensor optimizers on CUDA agree with libtorch's per-parameter steps", "[engine][cuda]") {
  if (skip_without_cuda()) return;
  at::manual_seed(5);
  std::vector<at::Tensor> a, b;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{16, 8, 3, 3}, {16}, {40, 7}}) {
    a.push_back(at::randn(shape, kCuda).requires_grad_());
    b.push_back(a.back().detach().clone().requires_grad_());
  }
  auto steps = [](torch::optim::Optimizer& opt, std::vector<at::Tensor>& params) {
    for (int s = 0; s < 3; ++s) {
      at::manual_seed(10 + s);
      for (auto& p : params) p.mutable_grad() = at::randn(p.sizes(), kCuda);
      opt.step();
    }
  };
  torch::optim::AdamW ref(a, torch::optim::AdamWOptions(1e-3).weight_decay(5e-4));
  en::ForeachAdamW multi(b, torch::optim::AdamWOptions(1e-3).weight_decay(5e-4));
  steps(ref, a);
  steps(multi, b);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(max_rel_diff(b[i], a[i]) < 1e-6);  // multi-tensor kernels: ulps
  torch::optim::SGD sgd_ref(a, torch::optim::SGDOptions(1e-2).momentum(0.9).nesterov(true).weight_decay(5e-4));
  en::ForeachSGD sgd_multi(b, torch::optim::SGDOptions(1e-2).momentum(0.9).nesterov(true).weight_decay(5e-4));
  steps(sgd_ref, a);
  steps(sgd_multi, b);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(max_rel_diff(b[i], a[i]) < 1e-6);
}

TEST_CASE("the fused optimizers on CUDA agree with libtorch's per-parameter steps and skip on found_inf",
          "[engine][cuda]") {
  if (skip_without_cuda()) return;
  if (!en::DeviceSkippable::skips_on_device()) return;  // libtorch < 2.4: the trainer steps without them
  at::manual_seed(6);
  std::vector<at::Tensor> a, b;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{16, 8, 3, 3}, {16}, {40, 7}}) {
    a.push_back(at::randn(shape, kCuda).requires_grad_());
    b.push_back(a.back().detach().clone().requires_grad_());
  }
  const at::Tensor found = at::ones({}, kCuda), none = at::zeros({}, kCuda);
  auto steps = [&](auto&& step, std::vector<at::Tensor>& params, bool with_skip) {
    for (int s = 0; s < 4; ++s) {
      at::manual_seed(20 + s);
      for (auto& p : params) p.mutable_grad() = at::randn(p.sizes(), kCuda);
      if (s == 2 && !with_skip) continue;  // the loops simply do not step where the fused one skips
      step(s == 2 ? found : none);
    }
  };
  torch::optim::AdamW ref(a, torch::optim::AdamWOptions(1e-3).weight_decay(5e-4));
  en::ForeachAdamW fused(b, torch::optim::AdamWOptions(1e-3).weight_decay(5e-4));
  steps([&](const at::Tensor&) { ref.step(); }, a, false);
  steps([&](const at::Tensor& f) { fused.step_unless(f); }, b, true);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(max_rel_diff(b[i], a[i]) < 1e-5);
  torch::optim::SGD sgd_ref(a, torch::optim::SGDOptions(1e-2).momentum(0.9).nesterov(true).weight_decay(5e-4));
  en::ForeachSGD sgd_fused(b, torch::optim::SGDOptions(1e-2).momentum(0.9).nesterov(true).weight_decay(5e-4));
  steps([&](const at::Tensor&) { sgd_ref.step(); }, a, false);
  steps([&](const at::Tensor& f) { sgd_fused.step_unless(f); }, b, true);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(max_rel_diff(b[i], a[i]) < 1e-5);
}

// The device step reads nothing back and has static shapes: its forward, loss and backward capture
// as a CUDA graph (a host read or a data-dependent shape inside a capture fails it), and a replay
// on new pixels gives the loss an eager step gives. (The optimizer is not captured: its learning
// rate and AdamW's bias corrections are host scalars today.)
TEST_CASE("the device step's forward, loss and backward capture as a CUDA graph and replay as eager", "[loss][cuda]") {
  if (skip_without_cuda()) return;
#if YOLOTRAIN_WITH_CUDA
  at::manual_seed(2);
  nn::DetectionModel model(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
  model->to(kCuda);
  model->train();
  yolotrain::loss::DetectionLossOptions options = yolotrain::loss::DetectionLossOptions::of(model);
  options.device_step = true;
  const yolotrain::loss::DetectionLoss loss(options);
  yolotrain::loss::Targets t = some_targets();
  t.padded = at::zeros({2, 8, 5});
  int64_t next[2] = {0, 0};  // each image's boxes in order, then zeros (data::Batch::targets)
  for (int64_t k = 0; k < 5; ++k) {
    const int64_t i = t.batch_idx[k].item<int64_t>();
    t.padded[i][next[i]++].copy_(at::cat({t.cls[k], t.bboxes[k]}));
  }
  t = {t.batch_idx.to(kCuda), t.cls.to(kCuda), t.bboxes.to(kCuda), t.padded.to(kCuda)};
  const at::Tensor x = at::rand({2, 3, 128, 128}, kCuda);  // the graph's input: refilled before a replay
  auto step = [&] {
    for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
    const yolotrain::loss::LossOutput out = loss(model->forward_heads(x).one2many, t);
    out.total.backward();
    return out.items;
  };
  // Capture runs on a side stream, after a warm-up there (as PyTorch's CUDA graph recipe).
  const c10::cuda::CUDAStream main = c10::cuda::getCurrentCUDAStream(), side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAEvent inputs_ready, warmed_up;
  inputs_ready.record(main);
  inputs_ready.block(side);
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    for (int i = 0; i < 3; ++i) step();  // warm-up: the loss's geometry cached, the kernels chosen
  }
  warmed_up.record(side);
  warmed_up.block(main);
  at::cuda::CUDAGraph graph;
  at::Tensor items;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
    graph.capture_begin();
    const yolotrain::loss::LossOutput out = loss(model->forward_heads(x).one2many, t);
    out.total.backward();
    items = out.items;
    graph.capture_end();
  }
  x.copy_(at::rand({2, 3, 128, 128}, kCuda));
  graph.replay();
  torch::cuda::synchronize();
  const at::Tensor replayed = items.clone();
  const at::Tensor eager = step();
  INFO("replayed " << replayed.cpu() << " eager " << eager.cpu());
  CHECK(max_rel_diff(replayed, eager) < 1e-5);
#endif
}

// cuda_graph=: the trainer's GraphedStep on a real model and the device step's loss — two eager
// steps, then a capture and replays — leaves the gradients an eager backward leaves (accumulated
// over two steps, as with nbs > batch) and returns the eager items, on new pixels each step.
TEST_CASE("GraphedStep's capture and replays equal eager steps, gradients accumulated", "[engine][cuda]") {
  if (skip_without_cuda()) return;
#if YOLOTRAIN_WITH_CUDA
  at::manual_seed(4);
  auto make = [] {
    at::manual_seed(4);
    nn::DetectionModel m(nn::DetectionModelOptions("yolov8n.yaml").nc(3));
    m->to(kCuda);
    m->train();
    return m;
  };
  nn::DetectionModel graphed_model = make(), eager_model = make();
  yolotrain::loss::DetectionLossOptions options = yolotrain::loss::DetectionLossOptions::of(graphed_model);
  options.device_step = true;
  const yolotrain::loss::DetectionLoss loss(options);
  yolotrain::data::Batch batch;  // the loader's fields: padded targets on the host
  const yolotrain::loss::Targets t = some_targets();
  batch.targets = at::zeros({2, 8, 5});
  int64_t next[2] = {0, 0};
  for (int64_t k = 0; k < 5; ++k) {
    const int64_t i = t.batch_idx[k].item<int64_t>();
    batch.targets[i][next[i]++].copy_(at::cat({t.cls[k], t.bboxes[k]}));
  }
  auto step_of = [&](nn::DetectionModel& m) {
    return [&, m](const at::Tensor& x, const yolotrain::data::Batch& b) mutable -> en::GraphedStep::Output {
      yolotrain::loss::Targets targets;
      targets.padded = b.targets.to(kCuda);
      const yolotrain::loss::LossOutput out = loss(m->forward_heads(x).one2many, targets);
      return {out.total, out.items};
    };
  };
  en::GraphedStep graphed(graphed_model->parameters(), /*eager_steps=*/2);
  for (int s = 0; s < 6; ++s) {
    at::manual_seed(30 + s);
    const at::Tensor x = at::rand({2, 3, 128, 128}, kCuda).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor replayed = graphed.run(x, batch, step_of(graphed_model));
    const auto eager = step_of(eager_model)(x, batch);
    eager.to_backward.backward();
    INFO("step " << s << " replayed " << replayed.cpu() << " eager " << eager.items.cpu());
    CHECK(max_rel_diff(replayed, eager.items) < 1e-4);
    if (s % 2 == 1) {  // an optimizer step's worth: compare the accumulated gradients, then drop them
      const auto a = graphed_model->parameters(), b = eager_model->parameters();
      for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(a[i].grad().defined() == b[i].grad().defined());  // frozen ones (the DFL's) have none
        if (b[i].grad().defined()) CHECK(max_rel_diff(a[i].grad(), b[i].grad()) < 1e-3);
      }
      for (auto& p : a) p.mutable_grad() = at::Tensor();
      for (auto& p : b) p.mutable_grad() = at::Tensor();
    }
  }
  CHECK(graphed.graphs() == 1);
  CHECK(graphed.disabled().empty());
#endif
}
