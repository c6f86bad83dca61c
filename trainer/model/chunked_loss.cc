#include "trainer/model/chunked_loss.h"

#include <ATen/ATen.h>

#include "common/status.h"
#include "trainer/model/torch_custom_function.h"

namespace skrull::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class LinearCrossEntropyFunction : public torch::autograd::Function<LinearCrossEntropyFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& weight, const at::Tensor& targets,
                            int64_t chunk_tokens) {
    const int64_t t = hidden.size(0);
    at::Tensor total = at::zeros({}, hidden.options().dtype(at::kFloat));
    for (int64_t c0 = 0; c0 < t; c0 += chunk_tokens) {
      const int64_t n = std::min(chunk_tokens, t - c0);
      at::Tensor tgt = targets.narrow(0, c0, n);
      at::Tensor valid = tgt.ne(kIgnoreIndex);
      at::Tensor logits = at::matmul(hidden.narrow(0, c0, n), weight.t()).to(at::kFloat);
      at::Tensor lse = logits.logsumexp(-1);
      at::Tensor picked = logits.gather(1, tgt.clamp_min(0).unsqueeze(1)).squeeze(1);
      total.add_(((lse - picked) * valid).sum());
    }
    ctx->save_for_backward({hidden, weight, targets});
    ctx->saved_data["chunk_tokens"] = chunk_tokens;
    return total;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const int64_t chunk_tokens = ctx->saved_data["chunk_tokens"].toInt();
    const at::Tensor g = grad_outputs[0].to(at::kFloat);
    const bool need_hidden = ctx->needs_input_grad(0);
    const bool need_weight = ctx->needs_input_grad(1);
    const int64_t t = hidden.size(0);

    at::Tensor dhidden = need_hidden ? at::empty_like(hidden) : at::Tensor();
    at::Tensor dweight;
    if (need_weight) dweight = at::zeros(weight.sizes(), weight.options().dtype(at::kFloat));
    for (int64_t c0 = 0; c0 < t; c0 += chunk_tokens) {
      const int64_t n = std::min(chunk_tokens, t - c0);
      at::Tensor h = hidden.narrow(0, c0, n);
      at::Tensor tgt = targets.narrow(0, c0, n);
      at::Tensor valid = tgt.ne(kIgnoreIndex);
      at::Tensor logits = at::matmul(h, weight.t()).to(at::kFloat);
      at::Tensor dlogits = logits.softmax(-1);
      dlogits.scatter_add_(1, tgt.clamp_min(0).unsqueeze(1),
                           at::full({n, 1}, -1.0, dlogits.options()));
      dlogits.mul_(valid.unsqueeze(1).to(at::kFloat) * g);
      if (need_hidden) {
        dhidden.narrow(0, c0, n).copy_(at::matmul(dlogits.to(weight.scalar_type()), weight));
      }
      if (need_weight) dweight.addmm_(dlogits.t(), h.to(at::kFloat));
    }
    return {dhidden, need_weight ? dweight.to(weight.scalar_type()) : at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor LinearCrossEntropySum(const at::Tensor& hidden, const at::Tensor& weight,
                                 const at::Tensor& targets, int64_t chunk_tokens) {
  SKRULL_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1))
      << "hidden " << hidden.sizes() << " weight " << weight.sizes();
  SKRULL_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0))
      << "targets " << targets.sizes() << " for " << hidden.size(0) << " tokens";
  SKRULL_CHECK(chunk_tokens >= 1) << chunk_tokens;
  return LinearCrossEntropyFunction::apply(hidden, weight, targets, chunk_tokens);
}

}  // namespace skrull::model
