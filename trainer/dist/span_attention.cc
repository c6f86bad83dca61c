#include "trainer/dist/span_attention.h"

#include <ATen/ATen.h>

#include <limits>

namespace skrull::dist {
namespace {

using model::AttentionSpan;

// [B, Hq, D] -> float [Hkv, G * B, D]; row g * B + b is query head kv * G + g.
at::Tensor ToGrouped(const at::Tensor& x, int64_t hkv) {
  const int64_t b = x.size(0), hq = x.size(1), d = x.size(2);
  return x.to(at::kFloat)
      .reshape({b, hkv, hq / hkv, d})
      .permute({1, 2, 0, 3})
      .reshape({hkv, hq / hkv * b, d});
}

// Inverse of ToGrouped.
at::Tensor FromGrouped(const at::Tensor& y, int64_t b) {
  const int64_t hkv = y.size(0), d = y.size(2), g = y.size(1) / b;
  return y.reshape({hkv, g, b, d}).permute({2, 0, 1, 3}).reshape({b, hkv * g, d});
}

at::Tensor LseToGrouped(const at::Tensor& lse, int64_t hkv) {
  const int64_t b = lse.size(0), hq = lse.size(1);
  return lse.reshape({b, hkv, hq / hkv}).permute({1, 2, 0}).reshape({hkv, hq / hkv * b, 1});
}

struct Block {
  int64_t row0;
  int64_t rows;
  int64_t visible;
};

at::Tensor BlockScores(const at::Tensor& qg, const at::Tensor& kg, const Block& blk, int64_t offset,
                       double scale) {
  at::Tensor keys = kg.narrow(1, 0, blk.visible);
  at::Tensor s = at::bmm(qg, keys.transpose(1, 2)).mul_(scale);
  if (blk.row0 + offset < blk.visible - 1) {
    auto opts = at::TensorOptions().dtype(at::kLong).device(s.device());
    at::Tensor j = at::arange(blk.visible, opts).unsqueeze(0);
    at::Tensor i = (at::arange(blk.rows, opts) + (blk.row0 + offset)).unsqueeze(1);
    at::Tensor mask = j > i;
    const int64_t hkv = s.size(0), g = s.size(1) / blk.rows;
    s.view({hkv, g, blk.rows, blk.visible})
        .masked_fill_(mask, -std::numeric_limits<float>::infinity());
  }
  return s;
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

// [L, Hkv, D] rows of a span -> float [Hkv, L, D], contiguous.
at::Tensor GroupedKeys(const at::Tensor& x, const AttentionSpan& span) {
  return x.narrow(0, span.k_begin, span.k_len).to(at::kFloat).permute({1, 0, 2}).contiguous();
}

}  // namespace

void SpanAttentionForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<AttentionSpan>& spans, double scale, int64_t block_rows,
                          at::Tensor& out, at::Tensor& lse) {
  const int64_t hkv = k.size(1);
  for (const AttentionSpan& span : spans) {
    if (span.q_len == 0) continue;
    at::Tensor kg = GroupedKeys(k, span);
    at::Tensor vg = GroupedKeys(v, span);
    ForEachBlock(span, block_rows, [&](const Block& blk) {
      at::Tensor qg = ToGrouped(q.narrow(0, span.q_begin + blk.row0, blk.rows), hkv);
      at::Tensor s = BlockScores(qg, kg, blk, span.causal_offset, scale);
      at::Tensor m = s.logsumexp(-1, /*keepdim=*/true);
      at::Tensor p = (s - m).exp_();
      at::Tensor o = at::bmm(p, vg.narrow(1, 0, blk.visible));
      out.narrow(0, span.q_begin + blk.row0, blk.rows).copy_(FromGrouped(o, blk.rows));
      const int64_t g = qg.size(1) / blk.rows;
      lse.narrow(0, span.q_begin + blk.row0, blk.rows)
          .copy_(m.reshape({hkv, g, blk.rows}).permute({2, 0, 1}).reshape({blk.rows, hkv * g}));
    });
  }
}

void SpanAttentionBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& out, const at::Tensor& lse, const at::Tensor& dout,
                           const std::vector<AttentionSpan>& spans, double scale,
                           int64_t block_rows, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv) {
  const int64_t hkv = k.size(1);
  for (const AttentionSpan& span : spans) {
    if (span.q_len == 0) continue;
    at::Tensor kg = GroupedKeys(k, span);
    at::Tensor vg = GroupedKeys(v, span);
    at::Tensor dkg = at::zeros_like(kg);
    at::Tensor dvg = at::zeros_like(vg);
    ForEachBlock(span, block_rows, [&](const Block& blk) {
      const int64_t row = span.q_begin + blk.row0;
      at::Tensor qg = ToGrouped(q.narrow(0, row, blk.rows), hkv);
      at::Tensor dog = ToGrouped(dout.narrow(0, row, blk.rows), hkv);
      at::Tensor og = ToGrouped(out.narrow(0, row, blk.rows), hkv);
      at::Tensor m = LseToGrouped(lse.narrow(0, row, blk.rows), hkv);
      at::Tensor s = BlockScores(qg, kg, blk, span.causal_offset, scale);
      at::Tensor p = (s - m).exp_();
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

}  // namespace skrull::dist
