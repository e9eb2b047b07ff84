#pragma once
// The step's per-parameter work (gradient clipping, dropping the gradients, the EMA) as a few
// multi-tensor operators instead of one or two per parameter, and without reading anything back
// on the host: on a GPU each per-parameter operator is a kernel launch (yolov8n has ~130
// parameters), and a host read waits for the device to finish. On the CPU (and on libtorch 1.13,
// which has no fused kernels for lists) the operators loop over the tensors inside and compute
// exactly what the per-parameter loops computed: the results are the same to the bit.
#include <ATen/ATen.h>

#include <vector>

namespace yolotrain::engine {

/// The defined gradients of `params`, in order.
std::vector<at::Tensor> defined_grads(const std::vector<at::Tensor>& params);

/// torch.nn.utils.clip_grad_norm_(grads, max_norm) (norm 2, as libtorch's clip_grad_norm_): the
/// gradients scaled in place by min(1, max_norm / (total norm + 1e-6)) on their device. Returns
/// the total norm, a 0-dim tensor on that device (undefined when `grads` is empty): nothing is read.
at::Tensor clip_grad_norm(std::vector<at::Tensor>& grads, double max_norm);

/// Every gradient of `params` dropped (PyTorch 2's zero_grad(set_to_none=True)): no kernel; the
/// next backward writes fresh gradients instead of adding to zeros.
void drop_grads(const std::vector<at::Tensor>& params);

/// averaged = averaged * decay + current * (1 - decay) over the pairs (the EMA's update), in two
/// multi-tensor operators. The lists pair up by position and hold floating-point tensors only.
void exponential_average(std::vector<at::Tensor>& averaged, const std::vector<at::Tensor>& current, double decay);

}  // namespace yolotrain::engine
