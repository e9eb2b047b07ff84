#include <ATen/ATen.h>

#include "class_term.hpp"

#include "catch.hpp"

namespace {

/// The plain formulation, differentiated by autograd: sum(softplus(x)) - sum(x * t) at the positives.
at::Tensor plain(const at::Tensor& x, const at::Tensor& image, const at::Tensor& cls, const at::Tensor& anchor,
                 const at::Tensor& t) {
  at::Tensor term = at::softplus(x).sum();
  if (image.numel() > 0) term = term - (x.flatten(2).index({image, cls, anchor}) * t).sum();
  return term;
}

}  // namespace

TEST_CASE("the class term's own backward gives autograd's gradient of the plain formulation", "[loss]") {
  at::manual_seed(5);
  for (bool channels_last : {false, true}) {
    for (int64_t n : {0, 1, 40}) {
      // The logits as the loss sees them: classes 64.. of a level output [B, 64 + nc, H, W].
      at::Tensor out = at::randn({3, 64 + 5, 6, 7}) * 4;
      if (channels_last) out = out.contiguous(at::MemoryFormat::ChannelsLast);
      const at::Tensor a = out.detach().clone().requires_grad_(), b = out.detach().clone().requires_grad_();
      const at::Tensor image = at::randint(0, 3, {n}, at::kLong), cls = at::randint(0, 5, {n}, at::kLong);
      const at::Tensor anchor = at::randint(0, 42, {n}, at::kLong), t = at::rand({n});
      const at::Tensor mine = yolotrain::loss::detail::class_term(a.narrow(1, 64, 5), image, cls, anchor, t);
      const at::Tensor ref = plain(b.narrow(1, 64, 5), image, cls, anchor, t);
      INFO("channels_last " << channels_last << " positives " << n);
      CHECK(mine.item<double>() == Approx(ref.item<double>()).epsilon(1e-6));
      (mine * 0.37).backward();
      (ref * 0.37).backward();
      CHECK(at::allclose(a.grad(), b.grad(), 1e-5, 1e-6));
      CHECK(a.grad().narrow(1, 0, 64).abs().sum().item<double>() == 0.0);  // the distributions get nothing
    }
  }
}
