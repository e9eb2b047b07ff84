#pragma once
// libtorch's SGD, Adam and AdamW with their per-parameter loops replaced by multi-tensor
// operators (_foreach_*): a group's update is a handful of operators instead of five to nine per
// parameter (on a GPU, kernel launches). Same options, same per-parameter state (checkpoints and
// optimizer_state() are unchanged), and on the CPU the same results to the bit: the operators'
// CPU kernels loop over the tensors with the per-tensor operations libtorch's step() uses
// (tests/unit/engine/foreach_optimizers_test.cpp compares them step by step).
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace yolotrain::engine {

class ForeachSGD : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

class ForeachAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

class ForeachAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace yolotrain::engine
