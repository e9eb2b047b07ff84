// The fused optimizer steps (DeviceSkippable, libtorch 2.4 and later) against the multi-tensor
// steps; a step skipped on the device; Adam's step counts kept on the device, settled into the
// state and resumed from it; and what the trainer's step does where libtorch has no fused kernels.
#include <ATen/ATen.h>

#include "foreach_optimizers.hpp"
#include "multi_tensor.hpp"
#include "optimizer.hpp"
#include "optimizer_groups.hpp"

#include "catch.hpp"

#include <limits>
#include <vector>

namespace en = yolotrain::engine;
namespace yt = yolotrain::test;

namespace fused_test {

using Params = std::vector<std::vector<at::Tensor>>;

bool all_close(const Params& a, const Params& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < a[i].size(); ++j) {
      if (!at::allclose(a[i][j], b[i][j], 1e-6, 1e-7)) return false;
    }
  }
  return true;
}

at::Tensor flag(bool set) { return at::full({}, set ? 1.0 : 0.0); }

// Four steps through step() and through step_unless() with nothing to skip, the learning rate
// changed between steps: the same parameters to float rounding (one fused kernel per group).
template <typename Optimizer, typename Options>
void check_fused_equals_foreach(const std::vector<Options>& options) {
  Params a = yt::make_params(1), b = yt::copy_params(a);
  Optimizer multi(yt::groups_of(a, options), options[0]), fused(yt::groups_of(b, options), options[0]);
  for (int step = 0; step < 4; ++step) {
    yt::set_grads(a, 100 + step);
    yt::set_grads(b, 100 + step);
    for (std::size_t g = 0; g < options.size(); ++g) {
      multi.param_groups()[g].options().set_lr(options[g].lr() * (1.0 + 0.5 * step));
      fused.param_groups()[g].options().set_lr(options[g].lr() * (1.0 + 0.5 * step));
    }
    multi.step();
    fused.step_unless(step % 2 ? flag(false) : at::Tensor());  // nothing found, or no flag at all
    INFO("step " << step);
    CHECK(all_close(a, b));
  }
}

// Three fused steps, the second with found_inf set, against two multi-tensor steps on the first
// and third gradients: the skipped step changed nothing, Adam's counts included.
template <typename Optimizer, typename Options>
void check_skipped_step(const Options& options) {
  Params a = yt::make_params(2), b = yt::copy_params(a);
  Optimizer fused(yt::groups_of(a, std::vector<Options>(3, options)), options);
  Optimizer multi(yt::groups_of(b, std::vector<Options>(3, options)), options);
  for (int step = 0; step < 3; ++step) {
    yt::set_grads(a, 200 + step);
    yt::set_grads(b, 200 + step);
    fused.step_unless(flag(step == 1));
    if (step != 1) multi.step();
  }
  CHECK(all_close(a, b));
}

}  // namespace fused_test

namespace ft = fused_test;

TEST_CASE("the fused SGD, Adam and AdamW steps equal the multi-tensor steps", "[engine][fused]") {
  if (!en::DeviceSkippable::skips_on_device()) {
    ft::Params p = yt::make_params(1);
    yt::set_grads(p, 2);
    en::ForeachSGD sgd(yt::groups_of(p, std::vector<torch::optim::SGDOptions>(3, torch::optim::SGDOptions(0.01))),
                       torch::optim::SGDOptions(0.01));
    CHECK_THROWS_WITH(sgd.step_unless({}), Catch::Contains("has no fused optimizer kernels"));
    return;
  }
  using O = torch::optim::SGDOptions;
  ft::check_fused_equals_foreach<en::ForeachSGD>(
      std::vector<O>{O(0.01).momentum(0.937).nesterov(true), O(0.01).momentum(0.937).nesterov(true).weight_decay(5e-4),
                     O(0.02).momentum(0.8).nesterov(true)});
  ft::check_fused_equals_foreach<en::ForeachSGD>(std::vector<O>{O(0.01), O(0.05).weight_decay(1e-3), O(0.02)});
  using W = torch::optim::AdamWOptions;
  ft::check_fused_equals_foreach<en::ForeachAdamW>(std::vector<W>{W(0.001).betas({0.9, 0.999}).weight_decay(0),
                                                                  W(0.001).betas({0.9, 0.999}).weight_decay(5e-4),
                                                                  W(0.002).betas({0.937, 0.999}).weight_decay(0)});
  using A = torch::optim::AdamOptions;
  ft::check_fused_equals_foreach<en::ForeachAdam>(
      std::vector<A>{A(0.001).betas({0.9, 0.999}), A(0.001).weight_decay(5e-4), A(0.003).eps(1e-6)});
}

TEST_CASE("a fused step with found_inf set changes nothing, Adam's step count included", "[engine][fused]") {
  if (!en::DeviceSkippable::skips_on_device()) return;
  ft::check_skipped_step<en::ForeachSGD>(
      torch::optim::SGDOptions(0.01).momentum(0.937).nesterov(true).weight_decay(5e-4));
  ft::check_skipped_step<en::ForeachAdamW>(torch::optim::AdamWOptions(0.001).weight_decay(5e-4));
  ft::check_skipped_step<en::ForeachAdam>(torch::optim::AdamOptions(0.001));
}

TEST_CASE("Adam's device step counts are saved with the state and resumed from it", "[engine][fused]") {
  if (!en::DeviceSkippable::skips_on_device()) return;
  using W = torch::optim::AdamWOptions;
  ft::Params a = yt::make_params(3);
  en::ForeachAdamW first(yt::groups_of(a, std::vector<W>(3, W(0.001))), W(0.001));
  for (int step = 0; step < 3; ++step) {
    yt::set_grads(a, 300 + step);
    first.step_unless(ft::flag(step == 0));  // two steps taken
  }
  const auto saved = en::optimizer_state(first, "AdamW", "");
  ft::Params b = yt::copy_params(a);
  en::ForeachAdamW resumed(yt::groups_of(b, std::vector<W>(3, W(0.001))), W(0.001));
  en::load_optimizer_state(resumed, "AdamW", saved, "");
  for (const auto& [name, t] : saved) {
    if (name.size() > 5 && name.substr(name.size() - 5) == ".step") CHECK(t.item<double>() == 2.0);
  }
  yt::set_grads(a, 400);
  yt::set_grads(b, 400);
  first.step_unless({});
  resumed.step_unless({});
  CHECK(yt::all_equal(a, b));  // the same kernel on the same state: to the bit
}

TEST_CASE("the trainer's step on the CPU runs a NaN gradient's update (the roll-back discards it) and obeys found_inf",
          "[engine][fused]") {
  ft::Params p = yt::make_params(4);
  const ft::Params before = yt::copy_params(p);
  yt::set_grads(p, 5);
  p[1][0].mutable_grad()[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<at::Tensor> grads;
  for (const auto& g : p) {
    for (const auto& t : g) grads.push_back(t.grad());
  }
  const at::Tensor norm = en::clip_grad_norm(grads, 10.0);
  using O = torch::optim::SGDOptions;
  en::ForeachSGD sgd(yt::groups_of(p, std::vector<O>(3, O(0.01).momentum(0.9))), O(0.01));
  en::step_unless_nonfinite(sgd, ft::flag(true), norm);  // the fp16 scaler found an inf: skipped (a host read here)
  CHECK(yt::all_equal(p, before));
  // Without a scaler the CPU steps (skipping on the device is CUDA's: the fused kernels' CPU
  // versions read the host); the tally's next read finds the NaN norm and rolls the run back.
  en::step_unless_nonfinite(sgd, {}, norm);
  CHECK_FALSE(at::isfinite(p[1][0]).all().item<bool>());
}
