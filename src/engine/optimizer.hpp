#pragma once

// The optimizer as Ultralytics builds and schedules it (private to the engine).

#include <torch/optim/optimizer.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/lifecycle/files/safetensors.hpp"
#include "yolotrain/nn/detection_model.hpp"

namespace yolotrain::engine {

/// What build_optimizer() chose (optimizer=auto decides from the run's length).
struct OptimizerChoice {
  std::string name;  ///< SGD, Adam, AdamW or MuSGD
  double lr = 0.01;
  double momentum = 0.937;
  double warmup_bias_lr = 0.1;
  double weight_decay = 0.0005;  ///< already scaled by batch * accumulate / nbs
};

/// The groups results.csv's lr/pg0, pg1, pg2 report, in the Ultralytics version's order: 8.4's
/// weight, bn, bias ({1, 2, 0} of the groups built here); 8.3's and MuSGD's, as built.
std::array<std::size_t, 3> reported_groups(const std::string& name, bool ultralytics84);

/// Ultralytics' choice: auto -> for more than 10000 iterations MuSGD(0.01, 0.9) (8.4; 8.3: SGD), else
/// AdamW(round(0.002 * 5 / (4 + nc), 6), 0.9), and warmup_bias_lr 0 in both cases. The name is
/// matched without regard to case, as Ultralytics does (optimizer=musgd -> MuSGD).
OptimizerChoice choose_optimizer(const TrainConfig& cfg, std::int64_t train_images, std::int64_t nc);

/// What the schedule needs to know of a parameter group.
struct GroupRole {
  bool bias = false;      ///< warms up from warmup_bias_lr (Ultralytics' param_group "bias")
  double lr_scale = 1.0;  ///< its initial lr over the chosen lr (MuSGD: 3 for the class heads)
};

/// SGD, Adam, AdamW: three groups in Ultralytics 8.2's order, pg0 biases (no decay), pg1 other
/// weights (decay), pg2 BatchNorm weights (no decay); SGD is Nesterov, Adam/AdamW betas are
/// (momentum, 0.999). MuSGD: Ultralytics 8.4's eight groups — weights (decay), BatchNorm weights,
/// biases, then the matrices and conv filters (Muon + SGD, decay) — each split into the class
/// heads' parameters (cv3, one2one_cv3: lr x3) and the rest, in that order; Nesterov, muon 0.2,
/// sgd 1.0.
std::unique_ptr<torch::optim::Optimizer> build_optimizer(nn::DetectionModel& model, const OptimizerChoice& choice);
/// The roles of build_optimizer()'s groups for `name`, in group order.
std::vector<GroupRole> group_roles(const std::string& name);

/// Sets the learning rate (and momentum, for SGD and MuSGD) of group `g`.
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

/// The optimizer's step, left undone where a gradient is inf/NaN: `found_inf` (the fp16 scaler's,
/// on the device; undefined without one), else a non-finite gradient `norm` (undefined: none).
/// Nothing read on the host where the optimizer skips on the device (DeviceSkippable: SGD, Adam,
/// AdamW with libtorch 2.4+, on CUDA: the fused kernels' CPU versions read each parameter's step
/// count on the host). Otherwise: with found_inf, one host read decides (as torch's
/// GradScaler.step); without, the step runs — a NaN gradient's step poisons the weights until the
/// tally's next read rolls the run back (docs/engine.md "Self-healing").
void step_unless_nonfinite(torch::optim::Optimizer& opt, const at::Tensor& found_inf, const at::Tensor& norm);

/// Ultralytics' LR factor of epoch `e`: linear max(1 - e/epochs, 0) * (1 - lrf) + lrf, or the
/// one-cycle cosine from 1 to lrf when cos_lr.
double lr_factor(const TrainConfig& cfg, std::int64_t epoch, std::int64_t epochs);
/// numpy.interp(x, [0, x1], [y0, y1]) clamped.
double interp(double x, double x1, double y0, double y1);
/// Python's round() and numpy's: to the nearest integer, halves to even (2.5 -> 2, 3.5 -> 4).
std::int64_t python_round(double x);

/// Warm-up iterations: 8.4's round(min(warmup_epochs, max(epochs - 1, 0)) * nb) (0: none); under
/// compat=8.3 max(round(warmup_epochs * nb), 100), -1 (none) at warmup_epochs=0. nb = batches per epoch.
std::int64_t warmup_iterations(const TrainConfig& cfg, std::int64_t nb);

/// Where the warm-up's ramps np.interp(x, [0, nw], ...) are read at global iteration `ni`.
struct WarmupPosition {
  std::int64_t nw = 0;           ///< warm-up iterations
  std::optional<double> lr_at;   ///< the learning rates' x; none: initial_lr * lf(epoch)
  std::optional<double> ramp_at; ///< momentum's and accumulate's x; none (no warm-up): the optimizer's
};
/// 8.4: x = ni while ni < nw; then momentum and accumulate keep step nw - 1's values for good and
/// the learning rates until the epoch ends (nothing resets them: engine/trainer.py:467-483).
/// compat=8.3: x = ni while ni <= nw, then the ramps' ends (x = nw) and the scheduler's lr.
/// Momentum ramps to the `momentum` argument even where optimizer=auto built the optimizer with 0.9
/// (Ultralytics interpolates to self.args.momentum).
WarmupPosition warmup_position(const TrainConfig& cfg, std::int64_t ni, std::int64_t nb);

/// Batches accumulated per optimizer step at global iteration `ni`: round(nbs / batch), ramped
/// from 1 as round(interp(x, [0, nw], [1, nbs / batch])) during the warm-up (warmup_position).
std::int64_t accumulate_at(const TrainConfig& cfg, std::int64_t ni, std::int64_t nb);

/// What global iteration `ni` (epoch ni / nb) trains with: each group's learning rate (group_roles'
/// order), the momentum (SGD and MuSGD take it) and the batches accumulated per optimizer step.
struct StepSchedule {
  std::vector<double> lr;
  double momentum = 0;
  std::int64_t accumulate = 1;
};
StepSchedule schedule_at(const TrainConfig& cfg, const OptimizerChoice& choice, std::int64_t ni, std::int64_t nb);

}  // namespace yolotrain::engine
