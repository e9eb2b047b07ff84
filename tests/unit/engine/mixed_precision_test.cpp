#include <ATen/ATen.h>

#include "mixed_precision.hpp"

#include "catch.hpp"

#include <limits>

namespace en = yolotrain::engine;

TEST_CASE("amp=true means fp16 with a scaler on CUDA and nothing on the CPU", "[engine]") {
  CHECK(en::amp_mode("true", torch::Device(torch::kCPU)) == en::AmpMode::Off);
  CHECK(en::amp_mode("true", torch::Device("cuda:0")) == en::AmpMode::Fp16Scaled);
  CHECK(en::amp_mode("bf16", torch::Device(torch::kCPU)) == en::AmpMode::Bf16);
  CHECK(en::amp_mode("false", torch::Device("cuda:0")) == en::AmpMode::Off);
}

TEST_CASE("bf16 autocast runs convolutions in bfloat16 only inside its scope", "[engine]") {
  const at::Tensor x = at::rand({1, 3, 8, 8});
  const at::Tensor w = at::rand({4, 3, 3, 3});
  {
    en::AutocastScope scope(en::AmpMode::Bf16, torch::Device(torch::kCPU));
    CHECK(at::conv2d(x, w).scalar_type() == at::kBFloat16);
  }
  CHECK(at::conv2d(x, w).scalar_type() == at::kFloat);
  {
    en::AutocastScope off(en::AmpMode::Off, torch::Device(torch::kCPU));
    CHECK(at::conv2d(x, w).scalar_type() == at::kFloat);
  }
}

TEST_CASE("the gradient scaler unscales and skips steps with inf and grows its scale, on the device", "[engine]") {
  at::Tensor p = at::zeros({3}).requires_grad_(true);
  en::GradScaler scaler(true);
  scaler.scale(p.sum() * 2).backward();
  CHECK(p.grad()[0].item<float>() == 2.0f * 65536.0f);
  at::Tensor found_inf = scaler.unscale({p.grad()});
  REQUIRE(found_inf.dim() == 0);  // a tensor on the gradients' device: nothing read
  CHECK(found_inf.item<float>() == 0.0f);
  CHECK(p.grad()[0].item<float>() == 2.0f);
  scaler.update(found_inf);
  CHECK(scaler.read().scale == 65536.0);
  CHECK(scaler.read().growth_tracker == 1);

  p.mutable_grad()[1] = std::numeric_limits<float>::infinity();
  found_inf = scaler.unscale({p.grad()});
  CHECK(found_inf.item<float>() == 1.0f);
  scaler.update(found_inf);
  CHECK(scaler.read().scale == 32768.0);
  CHECK(scaler.read().growth_tracker == 0);
  CHECK(scaler.read().skipped_steps == 1);
  const at::Tensor none = at::zeros({});
  for (int i = 0; i < 2000; ++i) scaler.update(none);
  CHECK(scaler.read().scale == 65536.0);
  CHECK(scaler.read().growth_tracker == 0);

  scaler.restore(1024.0, 7);  // a checkpoint's figures; the process's skipped count is kept
  CHECK(scaler.read().scale == 1024.0);
  CHECK(scaler.scale(at::ones({})).item<float>() == 1024.0f);
  CHECK(scaler.read().growth_tracker == 7);
  CHECK(scaler.read().skipped_steps == 1);

  en::GradScaler off(false);
  const at::Tensor loss = at::ones({});
  CHECK(off.scale(loss).item<float>() == 1.0f);
  CHECK_FALSE(off.unscale({p.grad()}).defined());
}
