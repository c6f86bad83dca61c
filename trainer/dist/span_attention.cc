#include "trainer/dist/span_attention.h"

#include <limits>

#include "trainer/model/flash_attention.h"

namespace skrull::dist {

// No score-block budget: blocks are exactly `block_rows` query rows.
constexpr int64_t kNoBlockBudget = std::numeric_limits<int64_t>::max();

void SpanAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<model::AttentionSpan>& spans, double scale,
                          int64_t block_rows, at::Tensor& out, at::Tensor& lse) {
  if (model::ChooseAttentionKernel(q, k, spans) == model::AttentionKernel::kFlashVarlen) {
    model::FlashAttentionForward(q, k, v, spans, scale, out, lse);
    return;
  }
  model::CausalAttentionForward(q, k, v, spans, scale, block_rows, kNoBlockBudget, out, lse);
}

void SpanAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                           const std::vector<model::AttentionSpan>& spans, double scale,
                           int64_t block_rows, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv) {
  if (model::ChooseAttentionKernel(q, k, spans) == model::AttentionKernel::kFlashVarlen) {
    model::FlashAttentionBackward(q, k, v, out, lse, dout, spans, scale, dq, dk, dv);
    return;
  }
  model::CausalAttentionBackward(q, k, v, out, lse, dout, spans, scale, block_rows, kNoBlockBudget,
                                 dq, dk, dv);
}

}  // namespace skrull::dist
