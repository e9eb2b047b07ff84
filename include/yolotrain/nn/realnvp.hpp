#pragma once
// Ultralytics 8.4's RealNVP (ultralytics/nn/modules/block.py, after mmpose's realnvp.py): the small
// normalizing flow YOLO26-pose's RLE loss reads keypoint residuals through. Six coupling layers over
// 2-d points, masks [[0, 1], [1, 0]] x 3; each with a scale net `s` (Linear 2-64, SiLU, Linear 64-64,
// SiLU, Linear 64-2, Tanh) and a translation net `t` (the same without the Tanh); a standard normal
// prior (buffers `loc`, `cov`). State-dict names as Ultralytics': flow_model.s.0.0.weight, ...
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

namespace yolotrain::nn {

class RealNVPImpl : public torch::nn::Cloneable<RealNVPImpl> {
 public:
  RealNVPImpl();
  /// Builds the nets in Ultralytics' order (s then t per layer, each Linear with libtorch's default
  /// init), then xavier_uniform(gain 0.01) on every Linear weight (RealNVP.init_weights).
  void reset() override;

  /// backward_p: points x [N, 2] mapped to the latent space, with the log-determinant of the
  /// Jacobian [N].
  std::pair<at::Tensor, at::Tensor> backward_p(const at::Tensor& x) const;
  /// log_prob: the prior's log density of backward_p(x) plus its log-determinant, [N].
  at::Tensor log_prob(const at::Tensor& x) const;

  torch::nn::ModuleList s{nullptr};
  torch::nn::ModuleList t{nullptr};
  at::Tensor loc, cov, mask;
};
TORCH_MODULE(RealNVP);

}  // namespace yolotrain::nn
