#include "class_term.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace yolotrain::loss::detail {
namespace {

// sum(softplus(x)) - sum(x * t) is the BCE sum (softplus(x) = log(1 + e^x) is the BCE of x
// against 0). Its backward writes d/dx = sigmoid(x) - t once, where autograd's own pieces would
// add a zero-filled gradient of the gather to softplus' and sum the two.
struct ClassTerm : public torch::autograd::Function<ClassTerm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& image,
                            const at::Tensor& cls, const at::Tensor& anchor, const at::Tensor& t,
                            const at::Tensor& weights) {
    const bool weighed = weights.numel() > 0;
    const at::Tensor w = weighed ? weights.to(x.options()) : weights;  // [C]
    ctx->save_for_backward({x, image, cls, anchor, t, w});
    at::Tensor term = weighed ? (at::softplus(x) * w.view({1, -1, 1, 1})).sum() : at::softplus(x).sum();
    if (image.numel() > 0) {
      const at::Tensor tw = weighed ? t * w.index({cls}) : t;
      term = term - (x.flatten(2).index({image, cls, anchor}) * tw).sum();
    }
    return term;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    at::Tensor grad = at::sigmoid(saved[0]);
    if (saved[1].numel() > 0)
      grad.flatten(2).index_put_({saved[1], saved[2], saved[3]}, -saved[4], /*accumulate=*/true);
    if (saved[5].numel() > 0) grad.mul_(saved[5].view({1, -1, 1, 1}));
    grad.mul_(grad_out[0]);
    return {grad, {}, {}, {}, {}, {}};
  }
};

}  // namespace

at::Tensor class_term(const at::Tensor& x, const at::Tensor& image, const at::Tensor& cls, const at::Tensor& anchor,
                      const at::Tensor& t, const at::Tensor& weights) {
  // libtorch 1.13's Function takes no undefined tensor: no weights are an empty one.
  return ClassTerm::apply(x, image, cls, anchor, t, weights.defined() ? weights : at::empty({0}, x.options()));
}

}  // namespace yolotrain::loss::detail
