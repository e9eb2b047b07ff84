#pragma once
// cuda_graph=: a training step's forward, loss and backward captured as a CUDA graph once per
// shape and replayed (docs/performance.md "CUDA graphs"). A replay is one launch for the hundreds
// of kernels of the forward, the loss and the backward, so the host no longer paces the GPU. What
// it needs is what the device step gives (static shapes, nothing read on the host): the detection
// and segmentation losses' device step; the optimizer, the EMA, the tally and the gradient
// averaging of several ranks stay eager around it.
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "yolotrain/data/loader.hpp"

namespace yolotrain::engine {

/// Whether a run graphs its steps, and when not, why (one line for the log).
struct GraphPlan {
  bool on = false;
  std::string reason;  ///< why not ("" when on)
};

/// What decides the plan (TrainConfig's and the task's facts).
struct GraphFacts {
  std::string arg = "auto";  ///< cuda_graph=: auto, true, false
  bool cuda = false;         ///< the run's device is a CUDA device
  bool built_with_cuda = false;
  std::string task_reason;  ///< why the task's loss cannot be graphed ("" when it can)
  bool multi_scale = false;
};

/// auto: on where every condition holds, else off with the first reason; true: the same, but a
/// reason is an error (ConfigError, exit 2) — except on the CPU, where there is nothing to graph
/// and true is refused too; false: off ("cuda_graph=false").
GraphPlan plan_cuda_graph(const GraphFacts& facts);

/// Runs training steps, each replaying its shape's graph once that shape was seen `eager_steps`
/// times eagerly (the kernels chosen, the loss's geometry cached), capturing it on the next. The
/// gradients land in the parameters' .grad as an eager backward leaves them: added to those there
/// (gradient accumulation), or new. Graphs share one memory pool; clear() releases them (a pause,
/// a roll-back, an epoch's end: the end-to-end loss's weights follow the epoch). A capture that
/// fails (an operator that reads the host, a data-dependent shape) turns graphs off for the rest
/// of the run: disabled() says why, and every step runs eagerly.
class GraphedStep {
 public:
  /// The step on device tensors: forward, loss, and the tensor to call backward() on (the scaled
  /// total); returns (that tensor, the loss items).
  struct Output {
    at::Tensor to_backward;
    at::Tensor items;
  };
  using Step = std::function<Output(const at::Tensor& img, const data::Batch& batch)>;

  GraphedStep(std::vector<at::Tensor> params, int eager_steps = 2);
  ~GraphedStep();
  GraphedStep(const GraphedStep&) = delete;
  GraphedStep& operator=(const GraphedStep&) = delete;

  /// One step on `img` (the preprocessed images on the device, in the run's memory format) and
  /// the batch's loss fields (targets, masks, sem_masks; copied to the device); returns the items.
  at::Tensor run(const at::Tensor& img, const data::Batch& batch, const Step& step);
  void clear();
  const std::string& disabled() const { return disabled_; }
  std::size_t graphs() const;

 private:
  struct Entry;
  at::Tensor eager(const at::Tensor& img, const data::Batch& batch, const Step& step);
  bool capture(Entry& e, const Step& step);
  at::Tensor replay(Entry& e, const at::Tensor& img, const data::Batch& batch);

  std::vector<at::Tensor> params_;
  int eager_steps_;
  std::map<std::vector<std::int64_t>, std::unique_ptr<Entry>> entries_;
  std::string disabled_;
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

}  // namespace yolotrain::engine
