#pragma once

// The optimizer as Ultralytics builds and schedules it (private to the engine).

#include <torch/optim/optimizer.h>

#include <memory>
#include <string>

#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/lifecycle/files/safetensors.hpp"
#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::engine {

/// What build_optimizer() chose (optimizer=auto decides from the run's length).
struct OptimizerChoice {
  std::string name;  ///< SGD, Adam or AdamW
  double lr = 0.01;
  double momentum = 0.937;
  double warmup_bias_lr = 0.1;
  double weight_decay = 0.0005;  ///< already scaled by batch * accumulate / nbs
};

/// Ultralytics' choice: auto -> SGD(0.01, 0.9) for more than 10000 iterations, else
/// AdamW(round(0.002 * 5 / (4 + nc), 6), 0.9), and warmup_bias_lr 0 in both cases.
OptimizerChoice choose_optimizer(const TrainConfig& cfg, std::int64_t train_images, std::int64_t nc);

/// Three groups in Ultralytics' order: pg0 biases (no decay), pg1 other weights (decay), pg2
/// BatchNorm weights (no decay). SGD is Nesterov; Adam/AdamW betas are (momentum, 0.999).
std::unique_ptr<torch::optim::Optimizer> build_optimizer(nn::DetectionModel& model, const OptimizerChoice& choice);

/// Sets the learning rate (and momentum, for SGD) of group `g`.
void set_group(torch::optim::Optimizer& opt, std::size_t g, double lr, std::optional<double> momentum);
/// The learning rate of group `g`.
double group_lr(torch::optim::Optimizer& opt, std::size_t g);

/// The per-parameter state (momentum buffers, Adam moments and step counts) as named tensors
/// "<prefix><param index>.<field>", and back. Full precision.
lifecycle::NamedTensors optimizer_state(torch::optim::Optimizer& opt, const std::string& name,
                                        const std::string& prefix);
/// A fresh tensor with the parameter's device, dtype and memory format (channels_last for conv
/// weights on the CPU) holding `value`: restored state then has the very layout the uninterrupted
/// run had, so reductions over it (the gradient norm) add in the same order, bit for bit.
at::Tensor shaped_like(const at::Tensor& param, const at::Tensor& value);

void load_optimizer_state(torch::optim::Optimizer& opt, const std::string& name, const lifecycle::NamedTensors& all,
                          const std::string& prefix);
/// Moves the per-parameter state to the devices of its parameters, after the model moved (pause
/// with release=offload, and back).
void rehome_optimizer_state(torch::optim::Optimizer& opt, const std::string& name);

/// Ultralytics' LR factor of epoch `e`: linear max(1 - e/epochs, 0) * (1 - lrf) + lrf, or the
/// one-cycle cosine from 1 to lrf when cos_lr.
double lr_factor(const TrainConfig& cfg, std::int64_t epoch, std::int64_t epochs);
/// numpy.interp(x, [0, x1], [y0, y1]) clamped.
double interp(double x, double x1, double y0, double y1);
/// Python's round() and numpy's: to the nearest integer, halves to even (2.5 -> 2, 3.5 -> 4).
std::int64_t python_round(double x);

/// Warm-up iterations: max(round(warmup_epochs * nb), 100), nb = batches per epoch.
std::int64_t warmup_iterations(const TrainConfig& cfg, std::int64_t nb);
/// Batches accumulated per optimizer step at global iteration `ni`: round(nbs / batch), ramped
/// from 1 as round(interp(ni, [0, nw], [1, nbs / batch])) during the warm-up.
std::int64_t accumulate_at(const TrainConfig& cfg, std::int64_t ni, std::int64_t nb);

}  // namespace yolotrain::engine
