// The step's multi-tensor paths against the per-parameter loops they replace: libtorch's SGD,
// Adam and AdamW steps, its clip_grad_norm_, the EMA's mul_/add_ — equal to the bit on the CPU —
// and the step tally's running means against the host's double arithmetic.
#include <ATen/ATen.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>

#include "foreach_optimizers.hpp"
#include "multi_tensor.hpp"
#include "optimizer_groups.hpp"
#include "step_tally.hpp"

#include "catch.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

namespace en = yolotrain::engine;
using yolotrain::test::all_equal;
using yolotrain::test::copy_params;
using yolotrain::test::groups_of;
using yolotrain::test::make_params;
using yolotrain::test::set_grads;

namespace {

// Four steps of `Reference` and `Foreach` on the same parameters and gradients, the learning rate
// changed between steps as the schedule does: equal parameters after each step.
template <typename Reference, typename Foreach, typename Options>
void check_equal_steps(const std::vector<Options>& options) {
  auto a = make_params(1), b = copy_params(a);
  Reference ref(groups_of(a, options), options[0]);
  Foreach multi(groups_of(b, options), options[0]);
  for (int step = 0; step < 4; ++step) {
    set_grads(a, 100 + step);
    set_grads(b, 100 + step);
    for (std::size_t g = 0; g < options.size(); ++g) {
      ref.param_groups()[g].options().set_lr(options[g].lr() * (1.0 + 0.5 * step));
      multi.param_groups()[g].options().set_lr(options[g].lr() * (1.0 + 0.5 * step));
    }
    ref.step();
    multi.step();
    INFO("step " << step);
    CHECK(all_equal(a, b));
  }
  CHECK(multi.state().size() == ref.state().size());
}

}  // namespace

TEST_CASE("the multi-tensor SGD step equals libtorch's SGD to the bit", "[engine][multi-tensor]") {
  using O = torch::optim::SGDOptions;
  check_equal_steps<torch::optim::SGD, en::ForeachSGD>(
      std::vector<O>{O(0.01).momentum(0.937).nesterov(true), O(0.01).momentum(0.937).nesterov(true).weight_decay(5e-4),
                     O(0.02).momentum(0.8).nesterov(true)});
  check_equal_steps<torch::optim::SGD, en::ForeachSGD>(
      std::vector<O>{O(0.01).momentum(0.9).dampening(0.1), O(0.01), O(0.05).weight_decay(1e-3)});
}

TEST_CASE("the multi-tensor Adam and AdamW steps equal libtorch's to the bit", "[engine][multi-tensor]") {
  using W = torch::optim::AdamWOptions;
  check_equal_steps<torch::optim::AdamW, en::ForeachAdamW>(
      std::vector<W>{W(0.001).betas({0.9, 0.999}).weight_decay(0), W(0.001).betas({0.9, 0.999}).weight_decay(5e-4),
                     W(0.002).betas({0.937, 0.999}).weight_decay(0)});
  using A = torch::optim::AdamOptions;
  check_equal_steps<torch::optim::Adam, en::ForeachAdam>(
      std::vector<A>{A(0.001).betas({0.9, 0.999}), A(0.001).weight_decay(5e-4), A(0.003).eps(1e-6)});
}

TEST_CASE("the multi-tensor steps refuse amsgrad", "[engine][multi-tensor]") {
  auto p = make_params(3);
  set_grads(p, 4);
  en::ForeachAdamW opt(
      groups_of(p, std::vector<torch::optim::AdamWOptions>(3, torch::optim::AdamWOptions(0.001).amsgrad(true))),
      torch::optim::AdamWOptions(0.001));
  CHECK_THROWS_WITH(opt.step(), Catch::Contains("amsgrad is not supported"));
}

TEST_CASE("clip_grad_norm equals libtorch's clip_grad_norm_ and reads nothing back", "[engine][multi-tensor]") {
  for (const double max_norm : {0.5, 10.0, 1e6}) {  // clipped hard, a little, not at all
    INFO("max_norm " << max_norm);
    auto a = make_params(5), b = copy_params(a);
    set_grads(a, 6);
    set_grads(b, 6);
    std::vector<at::Tensor> flat_a, flat_b;
    for (std::size_t i = 0; i < a.size(); ++i) {
      flat_a.insert(flat_a.end(), a[i].begin(), a[i].end());
      flat_b.insert(flat_b.end(), b[i].begin(), b[i].end());
    }
    const double expected = torch::nn::utils::clip_grad_norm_(flat_a, max_norm);
    std::vector<at::Tensor> grads = en::defined_grads(flat_b);
    const at::Tensor norm = en::clip_grad_norm(grads, max_norm);
    CHECK(norm.dim() == 0);
    CHECK(norm.item<double>() == expected);
    for (std::size_t i = 0; i < flat_a.size(); ++i) CHECK(at::equal(flat_a[i].grad(), flat_b[i].grad()));
  }
  std::vector<at::Tensor> none;
  CHECK_FALSE(en::clip_grad_norm(none, 10.0).defined());
}

TEST_CASE("drop_grads leaves no gradient and the next backward writes fresh ones", "[engine][multi-tensor]") {
  at::Tensor w = at::ones({3}).requires_grad_(true);
  (w * 2).sum().backward();
  en::drop_grads({w});
  CHECK_FALSE(w.grad().defined());
  (w * 3).sum().backward();
  CHECK(at::equal(w.grad(), at::full({3}, 3.0f)));
}

TEST_CASE("exponential_average equals the EMA's mul_ and add_ loop", "[engine][multi-tensor]") {
  auto a = make_params(7), b = copy_params(a), model = make_params(8);
  std::vector<at::Tensor> averaged, current;
  at::NoGradGuard no_grad;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < a[i].size(); ++j) {
      a[i][j].mul_(0.9996).add_(model[i][j], 1.0 - 0.9996);
      averaged.push_back(b[i][j]);
      current.push_back(model[i][j]);
    }
  }
  en::exponential_average(averaged, current, 0.9996);
  CHECK(all_equal(a, b));
}

TEST_CASE("the step tally keeps the host's running means and the first NaN/Inf step", "[engine][multi-tensor]") {
  en::StepTally tally;
  std::vector<double> host = {0.5, 0.25, 0.125};
  tally.reset(host, at::kCPU);
  const std::vector<std::vector<float>> steps = {{1.1f, 2.3f, 0.7f}, {0.9f, 2.1f, 0.8f}, {1.3f, 1.9f, 0.6f}};
  std::int64_t batch = 2;  // resumed at the epoch's third batch
  for (const auto& items : steps) {
    tally.add_loss(at::tensor(items), batch, 10 + batch);
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = (host[i] * double(batch) + double(items[i])) / double(batch + 1);
    ++batch;
  }
  en::StepTally::Reading r = tally.read();
  CHECK(r.means == host);  // exactly: the same double arithmetic
  CHECK(r.nonfinite_loss_step == -1);
  CHECK(r.nonfinite_grad_step == -1);

  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  tally.add_grad_norm(at::scalar_tensor(3.0f), 15);
  tally.add_grad_norm(at::scalar_tensor(inf), 16);
  tally.add_loss(at::tensor(std::vector<float>{1.0f, nan, 1.0f}), 5, 17);
  tally.add_grad_norm(at::scalar_tensor(nan), 17);
  tally.add_loss(at::tensor(std::vector<float>{nan, nan, nan}), 6, 18);
  r = tally.read();
  CHECK(r.nonfinite_grad_step == 16);  // the first one
  CHECK(r.nonfinite_loss_step == 17);

  tally.reset({0.0, 0.0, 0.0}, at::kCPU);
  r = tally.read();
  CHECK(r.nonfinite_loss_step == -1);
  CHECK(r.nonfinite_grad_step == -1);
  CHECK(r.means == std::vector<double>{0.0, 0.0, 0.0});
}
