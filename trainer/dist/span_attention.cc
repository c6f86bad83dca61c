#include "trainer/dist/span_attention.h"

#include <limits>

namespace skrull::dist {

// No score-block budget: blocks are exactly `block_rows` query rows.
constexpr int64_t kNoBlockBudget = std::numeric_limits<int64_t>::max();

void SpanAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<model::AttentionSpan>& spans, double scale,
                          int64_t block_rows, at::Tensor& out, at::Tensor& lse) {
  model::CausalAttentionForward(q, k, v, spans, scale, block_rows, kNoBlockBudget, out, lse);
}

void SpanAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                           const std::vector<model::AttentionSpan>& spans, double scale,
                           int64_t block_rows, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv) {
  model::CausalAttentionBackward(q, k, v, out, lse, dout, spans, scale, block_rows, kNoBlockBudget,
                                 dq, dk, dv);
}

}  // namespace skrull::dist
