#include "graphed_step.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>

#include <utility>

#include "yolotrain/error.hpp"

#if YOLOTRAIN_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace yolotrain::engine {

GraphPlan plan_cuda_graph(const GraphFacts& f) {
  if (f.arg == "false") return {false, "cuda_graph=false"};
  std::string why;
  if (!f.cuda) {
    why = "the run is not on a CUDA device";
  } else if (!f.built_with_cuda) {
    why = "this yolotrain was built without its CUDA code (YOLOTRAIN_WITH_CUDA=OFF)";
  } else if (f.multi_scale) {
    why = "multi_scale changes the image size every step";
  } else {
    why = f.task_reason;
  }
  if (why.empty()) return {true, ""};
  if (f.arg == "true") {
    throw ConfigError("cuda_graph=true: " + why + "; use cuda_graph=auto (graphs where they can be used) or false");
  }
  return {false, why};
}

namespace {

// A graph per input shape: the images', the padded targets', the masks'.
std::vector<std::int64_t> key_of(const at::Tensor& img, const data::Batch& b) {
  std::vector<std::int64_t> key(img.sizes().begin(), img.sizes().end());
  for (const at::Tensor* t : {&b.targets, &b.masks, &b.sem_masks}) {
    key.push_back(t->defined() ? t->dim() : -1);
    if (t->defined()) key.insert(key.end(), t->sizes().begin(), t->sizes().end());
  }
  return key;
}

// The graph's own inputs on the device: the loss fields the device step reads (the padded
// targets, the overlap masks), and empty per-box fields, which it does not read.
data::Batch device_fields(const data::Batch& b, const at::Device& device) {
  data::Batch s;
  const auto options = at::TensorOptions().device(device).dtype(at::kFloat);
  s.batch_idx = at::empty({0}, options);
  s.cls = at::empty({0, 1}, options);
  s.bboxes = at::empty({0, 4}, options);
  for (auto [from, to] : {std::pair{&b.targets, &s.targets}, {&b.masks, &s.masks}, {&b.sem_masks, &s.sem_masks}}) {
    if (from->defined()) *to = at::empty(from->sizes(), from->options().device(device));
  }
  return s;
}

void copy_fields(data::Batch& to, const data::Batch& from) {
  for (auto [src, dst] :
       {std::pair{&from.targets, &to.targets}, {&from.masks, &to.masks}, {&from.sem_masks, &to.sem_masks}}) {
    if (src->defined()) dst->copy_(*src, /*non_blocking=*/true);  // page-locked on CUDA: queued
  }
}

}  // namespace

struct GraphedStep::Entry {
  int seen = 0;
#if YOLOTRAIN_WITH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
  at::Tensor img;  // the graph's inputs
  data::Batch batch;
  at::Tensor items;               // its outputs
  std::vector<at::Tensor> grads;  // per parameter (undefined: none)
};

// Every graph allocates from one private pool, and graphs replay in any order, which PyTorch
// promises to be safe only in capture order. Here it is: a graph's inputs are allocated outside the
// capture (not in the pool); what the pool holds for one graph and another may reuse is only ever
// read right after that graph's own replay (intermediates, and the outputs: the items are cloned and
// the gradients added or copied before anything else replays).
struct GraphedStep::Pool {
#if YOLOTRAIN_WITH_CUDA
  at::cuda::MempoolId_t id = at::cuda::graph_pool_handle();
#endif
};

GraphedStep::GraphedStep(std::vector<at::Tensor> params, int eager_steps)
    : params_(std::move(params)), eager_steps_(eager_steps), pool_(std::make_unique<Pool>()) {}

GraphedStep::~GraphedStep() = default;

std::size_t GraphedStep::graphs() const {
  std::size_t n = 0;
#if YOLOTRAIN_WITH_CUDA
  for (const auto& [key, e] : entries_) n += e->graph ? 1 : 0;
#endif
  return n;
}

void GraphedStep::clear() {
  entries_.clear();
  pool_ = std::make_unique<Pool>();
}

at::Tensor GraphedStep::eager(const at::Tensor& img, const data::Batch& batch, const Step& step) {
  const Output out = step(img, batch);
  out.to_backward.backward();
  return out.items;
}

at::Tensor GraphedStep::run(const at::Tensor& img, const data::Batch& batch, const Step& step) {
#if YOLOTRAIN_WITH_CUDA
  if (!disabled_.empty() || !img.is_cuda()) return eager(img, batch, step);
  std::unique_ptr<Entry>& slot = entries_[key_of(img, batch)];
  if (!slot) slot = std::make_unique<Entry>();
  Entry& e = *slot;
  if (!e.graph) {
    if (e.seen++ < eager_steps_) return eager(img, batch, step);
    e.img = at::empty_like(img);
    e.batch = device_fields(batch, img.device());
    if (!capture(e, step)) {
      entries_.clear();
      return eager(img, batch, step);
    }
  }
  return replay(e, img, batch);
#else
  return eager(img, batch, step);
#endif
}

#if YOLOTRAIN_WITH_CUDA
namespace {

// A capture an operator broke (a host read, a data-dependent shape): end it so the stream leaves
// capture mode, and clear the error it left, which is not the next operator's.
void abandon(at::cuda::CUDAGraph& graph) {
  try {
    graph.capture_end();
  } catch (const std::exception&) {  // the capture was invalidated: expected
  }
  (void)cudaGetLastError();
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

// Captured on a side stream (CUDA's rule: not the legacy default stream), after the main stream's
// work; the gradients accumulated so far are set aside, so that the capture's backward makes new
// ones in the graph's pool. Capturing runs nothing: the replay that follows computes the step.
bool GraphedStep::capture(Entry& e, const Step& step) {
  std::vector<at::Tensor> kept;
  for (at::Tensor& p : params_) kept.push_back(std::exchange(p.mutable_grad(), at::Tensor()));
  const c10::cuda::CUDAStream main = c10::cuda::getCurrentCUDAStream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAEvent ready, captured;
  ready.record(main);
  ready.block(side);
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  const bool cache = at::autocast::is_autocast_cache_enabled();
  bool ok = true;
  {
    c10::cuda::CUDAStreamGuard on_side(side);
    at::autocast::set_autocast_cache_enabled(false);  // weights cast inside the graph, not kept from a cache
    try {
      graph->capture_begin(pool_->id);
      const Output out = step(e.img, e.batch);
      out.to_backward.backward();
      e.items = out.items;
      for (at::Tensor& p : params_) e.grads.push_back(std::exchange(p.mutable_grad(), at::Tensor()));
      graph->capture_end();
    } catch (const std::exception& ex) {
      abandon(*graph);
      disabled_ = "the step could not be captured as a CUDA graph (" + first_line(ex.what()) + ")";
      ok = false;
    }
    at::autocast::set_autocast_cache_enabled(cache);
  }
  captured.record(side);
  captured.block(main);
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].mutable_grad() = kept[i];
  if (ok) e.graph = std::move(graph);
  return ok;
}

// The new inputs into the graph's, the replay, and the gradients as an eager backward leaves
// them: added to those accumulated so far, or copies of the graph's (which its next replay
// overwrites) — one multi-tensor operator each.
at::Tensor GraphedStep::replay(Entry& e, const at::Tensor& img, const data::Batch& batch) {
  e.img.copy_(img);
  copy_fields(e.batch, batch);
  e.graph->replay();
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> sums, addends, fresh_from;
  std::vector<std::size_t> fresh;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!e.grads[i].defined()) continue;
    const at::Tensor& g = params_[i].grad();
    if (g.defined()) {
      sums.push_back(g);
      addends.push_back(e.grads[i]);
    } else {
      fresh.push_back(i);
      fresh_from.push_back(e.grads[i]);
    }
  }
  if (!sums.empty()) at::_foreach_add_(sums, addends);
  if (!fresh.empty()) {
    const std::vector<at::Tensor> copies = at::_foreach_mul(fresh_from, 1.0);
    for (std::size_t k = 0; k < fresh.size(); ++k) params_[fresh[k]].mutable_grad() = copies[k];
  }
  return e.items.clone();
}
#else
bool GraphedStep::capture(Entry&, const Step&) { return false; }
at::Tensor GraphedStep::replay(Entry& e, const at::Tensor&, const data::Batch&) { return e.items; }
#endif

}  // namespace yolotrain::engine
