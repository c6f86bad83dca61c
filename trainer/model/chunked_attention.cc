// CausalAttention: blockwise causal attention with a recomputing backward.
// Forward keeps, per span and per block of query rows, only the block's
// scores; it saves the float32 log-sum-exp of every (row, head) so backward
// can rebuild the probabilities block by block (P = exp(S - lse)) without
// storing them. GQA is done by grouping query heads per K/V head
// ([Hkv, G * rows, D] x [Hkv, D, keys]) so K/V are never repeated.
#include <ATen/ATen.h>

#include <limits>

#include "common/status.h"
#include "trainer/model/attention.h"
#include "trainer/model/torch_custom_function.h"

namespace skrull::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// [B, Hq, D] -> float [Hkv, G * B, D]; row g * B + b is query head
// kv * G + g at row b.
at::Tensor ToGrouped(const at::Tensor& x, int64_t hkv) {
  const int64_t b = x.size(0), hq = x.size(1), d = x.size(2);
  return x.to(at::kFloat)
      .reshape({b, hkv, hq / hkv, d})
      .permute({1, 2, 0, 3})
      .reshape({hkv, hq / hkv * b, d});
}

// Inverse of ToGrouped: [Hkv, G * B, D] -> [B, Hq, D].
at::Tensor FromGrouped(const at::Tensor& y, int64_t b) {
  const int64_t hkv = y.size(0), d = y.size(2), g = y.size(1) / b;
  return y.reshape({hkv, g, b, d}).permute({2, 0, 1, 3}).reshape({b, hkv * g, d});
}

// [B, Hq] float -> [Hkv, G * B, 1] (the ToGrouped row order).
at::Tensor LseToGrouped(const at::Tensor& lse, int64_t hkv) {
  const int64_t b = lse.size(0), hq = lse.size(1);
  return lse.reshape({b, hkv, hq / hkv}).permute({1, 2, 0}).reshape({hkv, hq / hkv * b, 1});
}

struct Block {
  int64_t row0;     // first query row of the block, 0-based in the span
  int64_t rows;     // query rows in the block
  int64_t visible;  // keys [0, visible) of the span can be seen by some row
};

// Scores of one block, masked: [Hkv, G * rows, visible].
at::Tensor BlockScores(const at::Tensor& qg, const at::Tensor& kg, const Block& blk, int64_t offset,
                       double scale) {
  at::Tensor keys = kg.narrow(1, 0, blk.visible);
  at::Tensor s = at::bmm(qg, keys.transpose(1, 2)).mul_(scale);
  // Row i of the block sees keys j <= row0 + i + offset; the first row
  // already sees all `visible` keys only when the block is one row.
  if (blk.row0 + offset < blk.visible - 1) {
    auto opts = at::TensorOptions().dtype(at::kLong).device(s.device());
    at::Tensor j = at::arange(blk.visible, opts).unsqueeze(0);
    at::Tensor i = (at::arange(blk.rows, opts) + (blk.row0 + offset)).unsqueeze(1);
    at::Tensor mask = j > i;  // [rows, visible]
    const int64_t hkv = s.size(0), g = s.size(1) / blk.rows;
    s.view({hkv, g, blk.rows, blk.visible})
        .masked_fill_(mask, -std::numeric_limits<float>::infinity());
  }
  return s;
}

// Query rows per block for a span: block_rows, fewer when the span's keys
// would make the score block exceed max_elements.
int64_t RowsPerBlock(const AttentionSpan& span, int64_t heads, int64_t block_rows,
                     int64_t max_elements) {
  const int64_t per_row = std::max<int64_t>(1, heads * span.k_len);
  return std::max<int64_t>(1, std::min(block_rows, max_elements / per_row));
}

template <typename Fn>
void ForEachBlock(const AttentionSpan& span, int64_t block_rows, Fn&& fn) {
  for (int64_t row0 = 0; row0 < span.q_len; row0 += block_rows) {
    Block blk;
    blk.row0 = row0;
    blk.rows = std::min(block_rows, span.q_len - row0);
    blk.visible = std::min(span.k_len, row0 + blk.rows + span.causal_offset);
    fn(blk);
  }
}

// [L, Hkv, D] key rows of a span -> float [Hkv, L, D], contiguous.
at::Tensor GroupedKeys(const at::Tensor& x, const AttentionSpan& span) {
  return x.narrow(0, span.k_begin, span.k_len).to(at::kFloat).permute({1, 0, 2}).contiguous();
}

class CausalAttentionFunction : public torch::autograd::Function<CausalAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, std::vector<int64_t> spans, double scale,
                            int64_t block_rows, int64_t max_elements) {
    at::Tensor out = at::zeros(q.sizes(), q.options().dtype(at::kFloat));
    at::Tensor lse = at::zeros({q.size(0), q.size(1)}, q.options().dtype(at::kFloat));
    CausalAttentionForward(q, k, v, UnflattenSpans(spans), scale, block_rows, max_elements, out,
                           lse);
    at::Tensor result = out.to(q.scalar_type());
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["spans"] = spans;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["block_rows"] = block_rows;
    ctx->saved_data["max_elements"] = max_elements;
    return result;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& q = saved[0];
    const at::Tensor& k = saved[1];
    const at::Tensor& v = saved[2];
    at::Tensor dq = at::zeros(q.sizes(), q.options().dtype(at::kFloat));
    at::Tensor dk = at::zeros(k.sizes(), k.options().dtype(at::kFloat));
    at::Tensor dv = at::zeros(v.sizes(), v.options().dtype(at::kFloat));
    CausalAttentionBackward(
        q, k, v, /*out=*/saved[3], /*lse=*/saved[4], grad_outputs[0],
        UnflattenSpans(ctx->saved_data["spans"].toIntVector()), ctx->saved_data["scale"].toDouble(),
        ctx->saved_data["block_rows"].toInt(), ctx->saved_data["max_elements"].toInt(), dq, dk, dv);
    return {dq.to(q.scalar_type()),
            dk.to(k.scalar_type()),
            dv.to(v.scalar_type()),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

void CausalAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const std::vector<AttentionSpan>& spans, double scale,
                            int64_t block_rows, int64_t max_block_elements, at::Tensor& out,
                            at::Tensor& lse) {
  const int64_t hkv = k.size(1);
  for (const AttentionSpan& span : spans) {
    if (span.q_len == 0) continue;
    at::Tensor kg = GroupedKeys(k, span);
    at::Tensor vg = GroupedKeys(v, span);
    const int64_t rows = RowsPerBlock(span, q.size(1), block_rows, max_block_elements);
    ForEachBlock(span, rows, [&](const Block& blk) {
      at::Tensor qg = ToGrouped(q.narrow(0, span.q_begin + blk.row0, blk.rows), hkv);
      at::Tensor s = BlockScores(qg, kg, blk, span.causal_offset, scale);
      at::Tensor m = s.logsumexp(-1, /*keepdim=*/true);  // [Hkv, G*rows, 1]
      at::Tensor p = s.sub_(m).exp_();
      at::Tensor o = at::bmm(p, vg.narrow(1, 0, blk.visible));
      out.narrow(0, span.q_begin + blk.row0, blk.rows).copy_(FromGrouped(o, blk.rows));
      const int64_t g = qg.size(1) / blk.rows;
      lse.narrow(0, span.q_begin + blk.row0, blk.rows)
          .copy_(m.reshape({hkv, g, blk.rows}).permute({2, 0, 1}).reshape({blk.rows, hkv * g}));
    });
  }
}

void CausalAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                             const std::vector<AttentionSpan>& spans, double scale,
                             int64_t block_rows, int64_t max_block_elements, at::Tensor& dq,
                             at::Tensor& dk, at::Tensor& dv) {
  const int64_t hkv = k.size(1);
  for (const AttentionSpan& span : spans) {
    if (span.q_len == 0) continue;
    at::Tensor kg = GroupedKeys(k, span);
    at::Tensor vg = GroupedKeys(v, span);
    at::Tensor dkg = at::zeros_like(kg);
    at::Tensor dvg = at::zeros_like(vg);
    const int64_t rows = RowsPerBlock(span, q.size(1), block_rows, max_block_elements);
    ForEachBlock(span, rows, [&](const Block& blk) {
      const int64_t row = span.q_begin + blk.row0;
      at::Tensor qg = ToGrouped(q.narrow(0, row, blk.rows), hkv);
      at::Tensor dog = ToGrouped(dout.narrow(0, row, blk.rows), hkv);
      at::Tensor og = ToGrouped(out.narrow(0, row, blk.rows), hkv);
      at::Tensor m = LseToGrouped(lse.narrow(0, row, blk.rows), hkv);
      at::Tensor s = BlockScores(qg, kg, blk, span.causal_offset, scale);
      at::Tensor p = s.sub_(m).exp_();  // [Hkv, G*rows, visible]
      at::Tensor keys = kg.narrow(1, 0, blk.visible);
      at::Tensor values = vg.narrow(1, 0, blk.visible);
      dvg.narrow(1, 0, blk.visible).add_(at::bmm(p.transpose(1, 2), dog));
      at::Tensor dp = at::bmm(dog, values.transpose(1, 2));
      at::Tensor delta = (dog * og).sum(-1, /*keepdim=*/true);
      at::Tensor ds = p.mul_(dp.sub_(delta)).mul_(scale);
      dq.narrow(0, row, blk.rows).copy_(FromGrouped(at::bmm(ds, keys), blk.rows));
      dkg.narrow(1, 0, blk.visible).add_(at::bmm(ds.transpose(1, 2), qg));
    });
    dk.narrow(0, span.k_begin, span.k_len).add_(dkg.permute({1, 0, 2}));
    dv.narrow(0, span.k_begin, span.k_len).add_(dvg.permute({1, 0, 2}));
  }
}

at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const std::vector<AttentionSpan>& spans, double scale,
                           int64_t block_rows, int64_t max_block_elements) {
  SKRULL_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3)
      << "q/k/v must be [T, H, D], got " << q.sizes() << " " << k.sizes() << " " << v.sizes();
  SKRULL_CHECK(k.sizes() == v.sizes()) << k.sizes() << " vs " << v.sizes();
  SKRULL_CHECK(q.size(2) == k.size(2)) << "head dims differ: " << q.size(2) << " vs " << k.size(2);
  SKRULL_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0)
      << "query heads " << q.size(1) << " not a multiple of K/V heads " << k.size(1);
  SKRULL_CHECK(block_rows >= 1 && max_block_elements >= 1)
      << block_rows << " " << max_block_elements;
  for (const AttentionSpan& s : spans) {
    SKRULL_CHECK(s.q_len >= 0 && s.q_begin >= 0 && s.q_begin + s.q_len <= q.size(0))
        << "span query rows [" << s.q_begin << ", " << s.q_begin + s.q_len << ") outside "
        << q.size(0);
    SKRULL_CHECK(s.k_len >= 0 && s.k_begin >= 0 && s.k_begin + s.k_len <= k.size(0))
        << "span key rows [" << s.k_begin << ", " << s.k_begin + s.k_len << ") outside "
        << k.size(0);
    SKRULL_CHECK(s.causal_offset >= 0) << "negative causal offset " << s.causal_offset;
    SKRULL_CHECK(s.q_len == 0 || s.k_len > 0) << "span with queries but no keys";
  }
  return CausalAttentionFunction::apply(q, k, v, FlattenSpans(spans), scale, block_rows,
                                        max_block_elements);
}

}  // namespace skrull::model
