// CausalAttention and the attention backends against a dense masked
// reference (values and gradients), including GQA, length-1 sequences,
// lengths that are not a multiple of the block, and offset spans (the shape
// of context-parallel shards).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/model/attention.h"
#include "trainer/model/torch_compat.h"

namespace skrull::model {
namespace {

struct Qkv {
  at::Tensor q, k, v;
};

Qkv RandomQkv(int64_t t, int64_t hq, int64_t hkv, int64_t d, uint64_t seed) {
  at::Generator gen = compat::MakeCpuGenerator(seed);
  auto make = [&](int64_t h) {
    at::Tensor x = at::empty({t, h, d}, at::kFloat);
    x.normal_(0, 1, gen);
    return x.set_requires_grad(true);
  };
  Qkv r;
  r.q = make(hq);
  r.k = make(hkv);
  r.v = make(hkv);
  return r;
}

// Dense reference in float64: one [L, L] causal mask per sequence, K/V heads
// repeated as HF's repeat_kv.
at::Tensor DenseReference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<int64_t>& cu) {
  const int64_t groups = q.size(1) / k.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
  std::vector<at::Tensor> outs;
  for (size_t i = 1; i < cu.size(); ++i) {
    const int64_t s = cu[i - 1], l = cu[i] - cu[i - 1];
    if (l == 0) continue;
    at::Tensor qs = q.narrow(0, s, l).to(at::kDouble).transpose(0, 1);  // [H, L, D]
    at::Tensor ks = k.narrow(0, s, l).to(at::kDouble).transpose(0, 1).repeat_interleave(groups, 0);
    at::Tensor vs = v.narrow(0, s, l).to(at::kDouble).transpose(0, 1).repeat_interleave(groups, 0);
    at::Tensor scores = at::matmul(qs, ks.transpose(1, 2)) * scale;
    at::Tensor mask = at::ones({l, l}, at::kBool).triu(1);
    scores = scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
    outs.push_back(at::matmul(scores.softmax(-1), vs).transpose(0, 1));
  }
  return at::cat(outs, 0);
}

struct Grads {
  at::Tensor out, dq, dk, dv;
};

template <typename Fn>
Grads RunWithGrads(const Qkv& x, const at::Tensor& dout, Fn fn) {
  for (const at::Tensor* t : {&x.q, &x.k, &x.v}) {
    if (t->grad().defined()) t->mutable_grad().zero_();
  }
  at::Tensor out = fn(x.q, x.k, x.v);
  (out.to(at::kDouble) * dout.to(at::kDouble)).sum().backward();
  return {out.detach().to(at::kDouble), x.q.grad().to(at::kDouble).clone(),
          x.k.grad().to(at::kDouble).clone(), x.v.grad().to(at::kDouble).clone()};
}

void ExpectClose(const at::Tensor& a, const at::Tensor& b, double tol, const char* what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double err = (a - b).abs().max().item<double>();
  EXPECT_LT(err, tol) << what << ": max abs error " << err;
}

void CheckAgainstReference(const std::vector<int64_t>& cu, int64_t hq, int64_t hkv, int64_t block,
                           int64_t max_block_elements = 1 << 25) {
  const int64_t t = cu.back(), d = 8;
  Qkv x = RandomQkv(t, hq, hkv, d, 7 + hq * 10 + hkv);
  at::Tensor dout = at::randn({t, hq, d}, at::kFloat);
  Grads ref =
      RunWithGrads(x, dout, [&](auto& q, auto& k, auto& v) { return DenseReference(q, k, v, cu); });
  auto backend = MakeChunkedAttention({block, max_block_elements});
  AttentionLayout layout = LocalLayout(cu);
  Grads got = RunWithGrads(
      x, dout, [&](auto& q, auto& k, auto& v) { return backend->Attend(q, k, v, layout, 0); });
  ExpectClose(got.out, ref.out, 1e-5, "output");
  ExpectClose(got.dq, ref.dq, 1e-5, "dq");
  ExpectClose(got.dk, ref.dk, 1e-5, "dk");
  ExpectClose(got.dv, ref.dv, 1e-5, "dv");
}

TEST(ChunkedAttention, MatchesDenseReferenceWithGqa) {
  CheckAgainstReference({0, 13, 14, 40, 45}, /*hq=*/4, /*hkv=*/2, /*block=*/5);
}

TEST(ChunkedAttention, MatchesDenseReferenceMhaAndMqa) {
  CheckAgainstReference({0, 9, 30}, 3, 3, 4);
  CheckAgainstReference({0, 9, 30}, 6, 1, 7);
}

TEST(ChunkedAttention, LengthOneSequencesAndEmptyBoundaries) {
  CheckAgainstReference({0, 1, 2, 2, 3, 11}, 2, 1, 3);
}

TEST(ChunkedAttention, BlockLargerThanSequenceAndBlockOfOne) {
  CheckAgainstReference({0, 6, 17}, 4, 2, 512);
  CheckAgainstReference({0, 6, 17}, 4, 2, 1);
}

// A small element budget shrinks the blocks (here to 1-3 rows) for long
// key ranges without changing results.
TEST(ChunkedAttention, BlockBudgetShrinksBlocksNotResults) {
  CheckAgainstReference({0, 3, 40}, 4, 2, 512, /*max_block_elements=*/4 * 40 * 3);
  CheckAgainstReference({0, 3, 40}, 4, 2, 512, /*max_block_elements=*/1);
}

TEST(ChunkedAttention, OutputDtypeFollowsInput) {
  Qkv x = RandomQkv(10, 2, 1, 4, 3);
  auto out = CausalAttention(x.q.to(at::kBFloat16), x.k.to(at::kBFloat16), x.v.to(at::kBFloat16),
                             {{0, 10, 0, 10, 0}}, 0.5, 4);
  EXPECT_EQ(out.scalar_type(), at::kBFloat16);
  EXPECT_EQ(out.sizes(), x.q.sizes());
}

// A context-parallel shard: query rows [g, g + n) of a sequence attend the
// whole sequence's keys with causal offset g; the result equals those rows
// of full attention. Also checks rows outside any span get zero.
TEST(ChunkedAttention, OffsetSpanEqualsRowsOfFullAttention) {
  const int64_t l = 23, g = 9, n = 7;
  Qkv x = RandomQkv(l, 4, 2, 8, 11);
  at::Tensor full = DenseReference(x.q, x.k, x.v, {0, l});
  // Queries live in their own tensor (as on a CP rank), with a padding row
  // before them that no span covers.
  at::Tensor q_shard = at::cat({at::zeros({1, 4, 8}), x.q.detach().narrow(0, g, n)}, 0);
  at::Tensor out = CausalAttention(q_shard, x.k, x.v, {{1, n, 0, l, g}}, 1.0 / std::sqrt(8.0), 3);
  ExpectClose(out.narrow(0, 1, n).to(at::kDouble), full.narrow(0, g, n).detach(), 1e-5, "shard");
  EXPECT_EQ(out[0].abs().sum().item<float>(), 0.0f);
}

TEST(ChunkedAttention, OffsetSpanGradientsMatchReference) {
  const int64_t l = 19, g = 6, n = 8;
  Qkv x = RandomQkv(l, 2, 1, 4, 5);
  at::Tensor dout = at::randn({n, 2, 4}, at::kFloat);
  Grads ref = RunWithGrads(x, dout, [&](auto& q, auto& k, auto& v) {
    return DenseReference(q, k, v, {0, l}).narrow(0, g, n);
  });
  Grads got = RunWithGrads(x, dout, [&](auto& q, auto& k, auto& v) {
    return CausalAttention(q.narrow(0, g, n), k, v, {{0, n, 0, l, g}}, 0.5, 3);
  });
  ExpectClose(got.out, ref.out, 1e-5, "output");
  ExpectClose(got.dq, ref.dq, 1e-5, "dq");
  ExpectClose(got.dk, ref.dk, 1e-5, "dk");
  ExpectClose(got.dv, ref.dv, 1e-5, "dv");
}

TEST(AttentionLayout, LocalLayoutAndSpans) {
  AttentionLayout layout = LocalLayout({0, 3, 3, 10});
  EXPECT_EQ(layout.num_tokens, 10);
  EXPECT_EQ(layout.NumLocalSequences(), 3);
  EXPECT_EQ(layout.MaxLocalSeqlen(), 7);
  auto spans = LocalSpans(layout);
  ASSERT_EQ(spans.size(), 2u);  // the empty sequence has no span
  EXPECT_EQ(spans[1].q_begin, 3);
  EXPECT_EQ(spans[1].k_len, 7);
}

}  // namespace
}  // namespace skrull::model
