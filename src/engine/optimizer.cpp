#include "optimizer.hpp"

#include <torch/nn/modules/batchnorm.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "foreach_optimizers.hpp"
#include "musgd.hpp"

#include "yolotrain/error.hpp"
#include "yolotrain/lifecycle/checkpoint/optimizer_state_key.hpp"

namespace yolotrain::engine {
namespace {

using torch::optim::OptimizerParamGroup;

std::array<std::vector<at::Tensor>, 3> parameter_groups(nn::DetectionModel& model) {
  std::array<std::vector<at::Tensor>, 3> g;  // pg0 biases, pg1 weights with decay, pg2 norm weights
  for (const auto& item : model->named_modules("", /*include_self=*/false)) {
    const bool norm = item.value()->as<torch::nn::BatchNorm2dImpl>() != nullptr;
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      if (p.key().find("bias") != std::string::npos) {
        g[0].push_back(p.value());
      } else if (norm) {
        g[2].push_back(p.value());
      } else {
        g[1].push_back(p.value());
      }
    }
  }
  return g;
}

// Ultralytics 8.4's MuSGD groups (BaseTrainer.build_optimizer): weights with decay, norm weights,
// biases, Muon's matrices and conv filters; each then split into class-head parameters and the rest.
std::array<std::vector<at::Tensor>, 8> musgd_groups(nn::DetectionModel& model) {
  std::set<const void*> boosted;  // the class branches: lr x3 when fine-tuning (Ultralytics' comment)
  const std::vector<torch::nn::ModuleList> branches =  // a Classify head has none (no cv3)
      model->classifier() ? std::vector<torch::nn::ModuleList>{}
                          : std::vector<torch::nn::ModuleList>{model->head()->cv3, model->head()->one2one_cv3};
  for (const auto& branch : branches) {
    if (!branch.is_empty()) {
      for (const auto& p : branch->parameters()) boosted.insert(p.unsafeGetTensorImpl());
    }
  }
  // 8.4 boosts the semantic branches too, by name (engine/trainer.py:1166: "proto.semseg", "SemanticSegment").
  for (const auto& p : model->named_parameters()) {
    if (p.key().find("proto.semseg") != std::string::npos || p.key().find("SemanticSegment") != std::string::npos)
      boosted.insert(p.value().unsafeGetTensorImpl());
  }
  std::array<std::vector<at::Tensor>, 8> g;
  for (const auto& item : model->named_modules("", /*include_self=*/false)) {
    const bool norm = item.value()->as<torch::nn::BatchNorm2dImpl>() != nullptr;
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      const at::Tensor& t = p.value();
      const std::size_t kind = t.dim() == 2 || t.dim() == 4                ? 3
                               : p.key().find("bias") != std::string::npos ? 2
                               : norm                                      ? 1
                                                                           : 0;
      g[2 * kind + (boosted.count(t.unsafeGetTensorImpl()) ? 0 : 1)].push_back(t);
    }
  }
  return g;
}

std::unique_ptr<torch::optim::Optimizer> build_musgd(nn::DetectionModel& model, const OptimizerChoice& c) {
  auto g = musgd_groups(model);
  const auto roles = group_roles("MuSGD");
  std::vector<OptimizerParamGroup> groups;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const std::size_t kind = i / 2;  // 0 weights, 1 norm weights, 2 biases, 3 Muon
    groups.emplace_back(g[i],
                        std::make_unique<MuSGDOptions>(MuSGDOptions(c.lr * roles[i].lr_scale)
                                                           .momentum(c.momentum)
                                                           .nesterov(true)
                                                           .weight_decay(kind == 0 || kind == 3 ? c.weight_decay : 0.0)
                                                           .use_muon(kind == 3)));
  }
  return std::make_unique<MuSGD>(std::move(groups), 0.2, 1.0);
}

// Visits each parameter's state, in group order, with its running index.
template <typename State, typename F>
void for_each_state(torch::optim::Optimizer& opt, F&& f) {
  auto& states = opt.state();
  std::size_t index = 0;
  for (auto& group : opt.param_groups()) {
    for (auto& p : group.params()) {
      auto it = states.find(lifecycle::optimizer_state_key(states, p));
      f(index++, p, it == states.end() ? nullptr : static_cast<State*>(it->second.get()));
    }
  }
}

const at::Tensor* find(const lifecycle::NamedTensors& all, const std::string& name) {
  for (const auto& [n, t] : all) {
    if (n == name) return &t;
  }
  return nullptr;
}

}  // namespace

at::Tensor shaped_like(const at::Tensor& param, const at::Tensor& value) {
  return at::empty_like(param).copy_(value);
}

namespace {

template <typename State>
void load_adam_like(torch::optim::Optimizer& opt, const lifecycle::NamedTensors& all, const std::string& prefix) {
  auto& states = opt.state();
  std::size_t index = 0;
  for (auto& group : opt.param_groups()) {
    for (auto& p : group.params()) {
      const std::string key = prefix + std::to_string(index++) + ".";
      const at::Tensor* step = find(all, key + "step");
      if (step == nullptr) continue;
      auto st = std::make_unique<State>();
      st->step(step->item<std::int64_t>());
      st->exp_avg(shaped_like(p, *find(all, key + "exp_avg")));
      st->exp_avg_sq(shaped_like(p, *find(all, key + "exp_avg_sq")));
      states[lifecycle::optimizer_state_key(states, p)] = std::move(st);
    }
  }
}

template <typename State>
void save_adam_like(torch::optim::Optimizer& opt, lifecycle::NamedTensors& out, const std::string& prefix) {
  for_each_state<State>(opt, [&](std::size_t i, const at::Tensor&, State* st) {
    if (st == nullptr) return;
    const std::string key = prefix + std::to_string(i) + ".";
    out.emplace_back(key + "step", at::tensor(st->step(), at::kLong));
    out.emplace_back(key + "exp_avg", st->exp_avg());
    out.emplace_back(key + "exp_avg_sq", st->exp_avg_sq());
  });
}

}  // namespace

std::vector<GroupRole> group_roles(const std::string& name) {
  if (name != "MuSGD") return {{true, 1.0}, {false, 1.0}, {false, 1.0}};
  std::vector<GroupRole> roles;
  for (std::size_t kind = 0; kind < 4; ++kind) {
    roles.push_back({kind == 2, 3.0});
    roles.push_back({kind == 2, 1.0});
  }
  return roles;
}

std::array<std::size_t, 3> reported_groups(const std::string& name, bool ultralytics84) {
  // 8.4's build_optimizer orders its groups weight, bn, bias (engine/trainer.py:1152-1154); 8.3's
  // bias, weight, bn, as they are built here. MuSGD's eight are 8.4's order already.
  if (ultralytics84 && name != "MuSGD") return {1, 2, 0};
  return {0, 1, 2};
}

namespace {

// Ultralytics' optimizer names, matched without regard to case.
std::string canonical_name(const std::string& name) {
  for (const char* known : {"SGD", "Adam", "AdamW", "MuSGD", "auto"}) {
    std::string a = name, b = known;
    std::transform(a.begin(), a.end(), a.begin(), [](unsigned char ch) { return std::tolower(ch); });
    std::transform(b.begin(), b.end(), b.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (a == b) return known;
  }
  return name;
}

void load_musgd(torch::optim::Optimizer& opt, const lifecycle::NamedTensors& all, const std::string& prefix) {
  auto& states = opt.state();
  std::size_t index = 0;
  for (auto& group : opt.param_groups()) {
    for (auto& p : group.params()) {
      const std::string key = prefix + std::to_string(index++) + ".";
      const at::Tensor* buf = find(all, key + "momentum_buffer");
      if (buf == nullptr) continue;
      auto st = std::make_unique<MuSGDParamState>();
      st->momentum_buffer(shaped_like(p, *buf));
      if (const at::Tensor* sgd = find(all, key + "momentum_buffer_SGD")) st->momentum_buffer_sgd(shaped_like(p, *sgd));
      states[lifecycle::optimizer_state_key(states, p)] = std::move(st);
    }
  }
}

}  // namespace

OptimizerChoice choose_optimizer(const TrainConfig& cfg, std::int64_t train_images, std::int64_t nc) {
  OptimizerChoice c{canonical_name(cfg.optimizer), cfg.lr0, cfg.momentum, cfg.warmup_bias_lr, cfg.weight_decay};
  const std::int64_t accumulate = std::max<std::int64_t>(python_round(double(cfg.nbs) / double(cfg.batch)), 1);
  c.weight_decay = cfg.weight_decay * double(cfg.batch) * double(accumulate) / double(cfg.nbs);
  if (c.name == "auto") {
    const auto per_epoch = static_cast<std::int64_t>(
        std::ceil(double(train_images) / double(std::max(cfg.batch, cfg.nbs))));
    const std::int64_t iterations = per_epoch * cfg.epochs;
    c.name = iterations <= 10000 ? "AdamW" : cfg.ultralytics84() ? "MuSGD" : "SGD";
    c.lr = iterations > 10000 ? 0.01 : std::round(0.002 * 5.0 / (4.0 + double(nc)) * 1e6) / 1e6;
    c.momentum = 0.9;
    c.warmup_bias_lr = 0.0;
  }
  return c;
}

std::unique_ptr<torch::optim::Optimizer> build_optimizer(nn::DetectionModel& model, const OptimizerChoice& c) {
  if (c.name == "MuSGD") return build_musgd(model, c);
  auto g = parameter_groups(model);
  const std::array<double, 3> decay = {0.0, c.weight_decay, 0.0};
  std::vector<OptimizerParamGroup> groups;
  for (std::size_t i = 0; i < 3; ++i) {
    std::unique_ptr<torch::optim::OptimizerOptions> options;
    if (c.name == "SGD") {
      options = std::make_unique<torch::optim::SGDOptions>(
          torch::optim::SGDOptions(c.lr).momentum(c.momentum).nesterov(true).weight_decay(decay[i]));
    } else if (c.name == "Adam") {
      options = std::make_unique<torch::optim::AdamOptions>(
          torch::optim::AdamOptions(c.lr).betas({c.momentum, 0.999}).weight_decay(decay[i]));
    } else if (c.name == "AdamW") {
      options = std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(c.lr).betas({c.momentum, 0.999}).weight_decay(decay[i]));
    } else {
      throw Error("optimizer '" + c.name + "' is not supported; use auto, SGD, Adam, AdamW or MuSGD");
    }
    groups.emplace_back(g[i], std::move(options));
  }
  // libtorch's optimizers with multi-tensor steps (foreach_optimizers.hpp): the same state and results.
  if (c.name == "SGD") return std::make_unique<ForeachSGD>(std::move(groups), torch::optim::SGDOptions(c.lr));
  if (c.name == "Adam") return std::make_unique<ForeachAdam>(std::move(groups), torch::optim::AdamOptions(c.lr));
  return std::make_unique<ForeachAdamW>(std::move(groups), torch::optim::AdamWOptions(c.lr));
}

void set_group(torch::optim::Optimizer& opt, std::size_t g, double lr, std::optional<double> momentum) {
  auto& options = opt.param_groups()[g].options();
  options.set_lr(lr);
  if (momentum) {
    if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) sgd->momentum(*momentum);
    if (auto* musgd = dynamic_cast<MuSGDOptions*>(&options)) musgd->momentum(*momentum);
  }
}

double group_lr(torch::optim::Optimizer& opt, std::size_t g) { return opt.param_groups()[g].options().get_lr(); }

lifecycle::NamedTensors optimizer_state(torch::optim::Optimizer& opt, const std::string& name,
                                        const std::string& prefix) {
  if (auto* fused = dynamic_cast<DeviceSkippable*>(&opt)) fused->settle();  // Adam's step counts
  lifecycle::NamedTensors out;
  if (name == "SGD") {
    for_each_state<torch::optim::SGDParamState>(opt, [&](std::size_t i, const at::Tensor&, auto* st) {
      if (st != nullptr) out.emplace_back(prefix + std::to_string(i) + ".momentum_buffer", st->momentum_buffer());
    });
  } else if (name == "MuSGD") {
    for_each_state<MuSGDParamState>(opt, [&](std::size_t i, const at::Tensor&, auto* st) {
      if (st == nullptr) return;
      out.emplace_back(prefix + std::to_string(i) + ".momentum_buffer", st->momentum_buffer());
      if (st->momentum_buffer_sgd().defined())
        out.emplace_back(prefix + std::to_string(i) + ".momentum_buffer_SGD", st->momentum_buffer_sgd());
    });
  } else if (name == "Adam") {
    save_adam_like<torch::optim::AdamParamState>(opt, out, prefix);
  } else {
    save_adam_like<torch::optim::AdamWParamState>(opt, out, prefix);
  }
  return out;
}

void load_optimizer_state(torch::optim::Optimizer& opt, const std::string& name, const lifecycle::NamedTensors& all,
                          const std::string& prefix) {
  if (auto* fused = dynamic_cast<DeviceSkippable*>(&opt)) fused->reload();
  if (name == "SGD") {
    auto& states = opt.state();
    std::size_t index = 0;
    for (auto& group : opt.param_groups()) {
      for (auto& p : group.params()) {
        const at::Tensor* buf = find(all, prefix + std::to_string(index++) + ".momentum_buffer");
        if (buf == nullptr) continue;
        auto st = std::make_unique<torch::optim::SGDParamState>();
        st->momentum_buffer(shaped_like(p, *buf));
        states[lifecycle::optimizer_state_key(states, p)] = std::move(st);
      }
    }
  } else if (name == "MuSGD") {
    load_musgd(opt, all, prefix);
  } else if (name == "Adam") {
    load_adam_like<torch::optim::AdamParamState>(opt, all, prefix);
  } else {
    load_adam_like<torch::optim::AdamWParamState>(opt, all, prefix);
  }
}

void rehome_optimizer_state(torch::optim::Optimizer& opt, const std::string& name) {
  const lifecycle::NamedTensors state = optimizer_state(opt, name, "");
  opt.state().clear();
  load_optimizer_state(opt, name, state, "");
}

void step_unless_nonfinite(torch::optim::Optimizer& opt, const at::Tensor& found_inf, const at::Tensor& norm) {
  auto* fused = dynamic_cast<DeviceSkippable*>(&opt);
  const at::Tensor& flag = found_inf.defined() ? found_inf : norm;
  // CUDA only: the fused kernels' CPU versions read each parameter's step count on the host.
  if (fused != nullptr && DeviceSkippable::skips_on_device() && flag.defined() && flag.is_cuda()) {
    fused->step_unless(found_inf.defined() ? found_inf
                       : norm.defined()    ? norm.isfinite().logical_not().to(at::kFloat)
                                           : at::Tensor());
    return;
  }
  if (found_inf.defined() && found_inf.item<float>() != 0.0f) return;  // the scaler skips it
  opt.step();
}

double lr_factor(const TrainConfig& cfg, std::int64_t epoch, std::int64_t epochs) {
  const double e = double(epoch), n = double(epochs);
  if (cfg.cos_lr) return ((1.0 - std::cos(e * M_PI / n)) / 2.0) * (cfg.lrf - 1.0) + 1.0;
  return std::max(1.0 - e / n, 0.0) * (1.0 - cfg.lrf) + cfg.lrf;
}

double interp(double x, double x1, double y0, double y1) {
  if (x <= 0) return y0;
  if (x >= x1) return y1;
  return y0 + (y1 - y0) * x / x1;
}

std::int64_t python_round(double x) { return static_cast<std::int64_t>(std::nearbyint(x)); }

std::int64_t warmup_iterations(const TrainConfig& cfg, std::int64_t nb) {
  if (!cfg.ultralytics84()) {  // 8.3.58: -1 (none) at warmup_epochs=0
    return cfg.warmup_epochs > 0 ? std::max<std::int64_t>(python_round(cfg.warmup_epochs * double(nb)), 100) : -1;
  }
  // 8.4's BaseTrainer._get_warmup_iterations (engine/trainer.py:253-256): the last epoch never warms.
  const double epochs = std::min(cfg.warmup_epochs, double(std::max<std::int64_t>(cfg.epochs - 1, 0)));
  return epochs > 0 ? python_round(epochs * double(nb)) : 0;
}

WarmupPosition warmup_position(const TrainConfig& cfg, std::int64_t ni, std::int64_t nb) {
  WarmupPosition w;
  w.nw = warmup_iterations(cfg, nb);
  if (!cfg.ultralytics84()) {  // 8.3: `ni <= nw` (nw >= 100), then the scheduler's lr; ramps at their ends
    if (w.nw < 0) return w;
    w.ramp_at = double(std::min(ni, w.nw));
    if (ni <= w.nw) w.lr_at = double(ni);
    return w;
  }
  // 8.4 (engine/trainer.py:467-483): `ni < nw`; after it nothing resets momentum or accumulate, so
  // they keep step nw - 1's values, and the lr keeps it until the next epoch's scheduler step.
  if (ni < w.nw) {
    w.lr_at = w.ramp_at = double(ni);
  } else if (w.nw > 0) {
    w.ramp_at = double(w.nw - 1);
    if (nb > 0 && (w.nw - 1) / nb == ni / nb) w.lr_at = double(w.nw - 1);
  }
  return w;
}

std::int64_t accumulate_at(const TrainConfig& cfg, std::int64_t ni, std::int64_t nb) {
  const double full = double(cfg.nbs) / double(cfg.batch);
  const WarmupPosition w = warmup_position(cfg, ni, nb);
  if (w.ramp_at) return std::max<std::int64_t>(1, python_round(interp(*w.ramp_at, double(w.nw), 1.0, full)));
  return std::max<std::int64_t>(python_round(full), 1);
}

StepSchedule schedule_at(const TrainConfig& cfg, const OptimizerChoice& choice, std::int64_t ni, std::int64_t nb) {
  const WarmupPosition w = warmup_position(cfg, ni, nb);
  const double factor = lr_factor(cfg, nb > 0 ? ni / nb : 0, cfg.epochs);
  StepSchedule s;
  s.momentum = w.ramp_at ? interp(*w.ramp_at, double(w.nw), cfg.warmup_momentum, cfg.momentum) : choice.momentum;
  s.accumulate = accumulate_at(cfg, ni, nb);
  for (const GroupRole& role : group_roles(choice.name)) {
    const double target = choice.lr * role.lr_scale * factor;  // Ultralytics: initial_lr * lf(epoch)
    const double start = role.bias ? choice.warmup_bias_lr : 0.0;
    s.lr.push_back(w.lr_at ? interp(*w.lr_at, double(w.nw), start, target) : target);
  }
  return s;
}

}  // namespace yolotrain::engine
