#pragma once
// Ultralytics 8.4's MuSGD (ultralytics/optim/muon.py), in libtorch's optimizer style: a parameter
// group with use_muon gets Muon's orthogonalised momentum update (scaled by `muon`) and then an
// SGD momentum update (its learning rate scaled by `sgd`, weight decay in the SGD part only);
// any other group gets SGD alone. Ultralytics' trainer uses muon 0.2, sgd 1.0, Nesterov.
// libtorch has no Muon; written by hand after Ultralytics' code, step for step, so that one step
// equals theirs (tests/unit/engine/musgd_test.cpp).
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include <vector>

namespace yolotrain::engine {

struct MuSGDOptions : public torch::optim::OptimizerCloneableOptions<MuSGDOptions> {
  MuSGDOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: libtorch's options are implicit
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, nesterov) = false;
  TORCH_ARG(bool, use_muon) = false;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct MuSGDParamState : public torch::optim::OptimizerCloneableParamState<MuSGDParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);      ///< Muon's (use_muon groups) or SGD's
  TORCH_ARG(torch::Tensor, momentum_buffer_sgd);  ///< the SGD part's in a use_muon group
};

class MuSGD : public torch::optim::Optimizer {
 public:
  MuSGD(std::vector<torch::optim::OptimizerParamGroup> groups, double muon = 0.2, double sgd = 1.0);
  torch::Tensor step(LossClosure closure = nullptr) override;

  double muon() const { return muon_; }
  double sgd() const { return sgd_; }

 private:
  double muon_, sgd_;
};

/// Muon's orthogonalisation of G [..., m, n] (2-D or a batch of 3-D): five quintic Newton-Schulz
/// iterations in bfloat16 (a, b, c = 3.4445, -4.7750, 2.0315) on G over its norm; returns bfloat16.
/// Each operation is computed in float32 and rounded to bfloat16 once, as libtorch 2.x does, so
/// that libtorch 1.13 gives the same bits.
torch::Tensor zeropower_via_newtonschulz5(const torch::Tensor& g, double eps = 1e-7);

/// Muon's update of each gradient (updating its momentum buffer in place): the EMA momentum
/// (Nesterov: beta * buffer + (1 - beta) * grad), as a matrix (conv filters as [out, rest]), rows
/// <= columns (transposed otherwise), orthogonalised in batches of equal rows and scale (columns
/// zero-padded, as Ultralytics batches them), times sqrt(max(1, grad.size(-2) / grad.size(-1))).
std::vector<torch::Tensor> muon_update(const std::vector<torch::Tensor>& grads, std::vector<torch::Tensor>& momentums,
                                       double beta, bool nesterov);

}  // namespace yolotrain::engine
