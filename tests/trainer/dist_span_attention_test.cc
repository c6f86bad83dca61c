// The split forward/backward passes against model::CausalAttention (autograd).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <gtest/gtest.h>

#include "trainer/dist/span_attention.h"
#include "trainer/model/attention.h"

namespace skrull::dist {
namespace {

using model::AttentionSpan;

TEST(SpanAttention, ForwardAndBackwardMatchCausalAttention) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  const int64_t tq = 20, tk = 30, hq = 6, hkv = 2, d = 4;
  at::Tensor q = at::randn({tq, hq, d}, gen, at::kFloat);
  at::Tensor k = at::randn({tk, hkv, d}, gen, at::kFloat);
  at::Tensor v = at::randn({tk, hkv, d}, gen, at::kFloat);
  at::Tensor w = at::randn({tq, hq, d}, gen, at::kFloat);
  // A whole sequence, a query chunk with a causal offset into longer keys,
  // and a chunk whose keys start mid-buffer. Rows 18..19 are in no span.
  const std::vector<AttentionSpan> spans = {{0, 5, 0, 5, 0}, {5, 7, 10, 20, 9}, {12, 6, 3, 8, 2}};
  const double scale = 0.5;

  at::Tensor qa = q.clone().requires_grad_(), ka = k.clone().requires_grad_(),
             va = v.clone().requires_grad_();
  at::Tensor want = model::CausalAttention(qa, ka, va, spans, scale, /*block_rows=*/4);
  torch::autograd::backward({(want * w).sum()});

  at::Tensor out = at::zeros({tq, hq, d}), lse = at::zeros({tq, hq});
  SpanAttentionForward(q, k, v, spans, scale, 4, out, lse);
  EXPECT_TRUE(at::allclose(out, want.detach(), 1e-5, 1e-6));
  at::Tensor dq = at::zeros({tq, hq, d}), dk = at::zeros({tk, hkv, d}),
             dv = at::zeros({tk, hkv, d});
  SpanAttentionBackward(q, k, v, out, lse, w, spans, scale, 4, dq, dk, dv);
  EXPECT_TRUE(at::allclose(dq, qa.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(dk, ka.grad(), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(dv, va.grad(), 1e-5, 1e-6));
  EXPECT_EQ(out.narrow(0, 18, 2).abs().sum().item<float>(), 0.0f);
}

TEST(SpanAttention, BackwardAddsIntoKeyGradients) {
  at::Tensor q = at::ones({2, 1, 2}), k = at::ones({2, 1, 2}), v = at::ones({2, 1, 2});
  const std::vector<AttentionSpan> spans = {{0, 2, 0, 2, 0}};
  at::Tensor out = at::zeros({2, 1, 2}), lse = at::zeros({2, 1});
  SpanAttentionForward(q, k, v, spans, 1.0, 8, out, lse);
  at::Tensor dq = at::zeros({2, 1, 2}), dk = at::full({2, 1, 2}, 5.0),
             dv = at::full({2, 1, 2}, 5.0);
  SpanAttentionBackward(q, k, v, out, lse, at::ones({2, 1, 2}), spans, 1.0, 8, dq, dk, dv);
  // dV of key 0 = p(0|0) + p(0|1) = 1 + 0.5 over the 5 already there.
  EXPECT_FLOAT_EQ(dv[0][0][0].item<float>(), 6.5f);
  EXPECT_FLOAT_EQ(dv[1][0][0].item<float>(), 5.5f);
}

}  // namespace
}  // namespace skrull::dist
