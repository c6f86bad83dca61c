// The attention kernel rule and the flash path's CPU-testable parts: the
// varlen packing of spans (key trimming, shared key prefixes), the
// log-sum-exp layouts, and the claim the path rests on: a bottom-right
// causal varlen kernel over the packing computes CausalAttention's output and
// log-sum-exp (checked with a dense emulation of that kernel).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "trainer/model/attention.h"
#include "trainer/model/flash_attention.h"
#include "trainer/model/torch_compat.h"

namespace skrull::model {
namespace {

AttentionCallFacts FlashFriendly() {
  AttentionCallFacts f;
  f.flash_built = true;
  f.on_cuda = true;
  f.dtype = c10::kBFloat16;
  f.flash_supported = true;
  f.head_dim = 128;
  f.q_heads = 28;
  f.kv_heads = 4;
  f.spans_bottom_right = true;
  f.max_q_len = 4096;
  return f;
}

TEST(AttentionKernelRule, PicksFlashVarlenWhenEveryConditionHolds) {
  EXPECT_EQ(SelectAttentionKernel(FlashFriendly()), AttentionKernel::kFlashVarlen);
  AttentionCallFacts fp16 = FlashFriendly();
  fp16.dtype = c10::kHalf;
  EXPECT_EQ(SelectAttentionKernel(fp16), AttentionKernel::kFlashVarlen);
  AttentionCallFacts one_query_mha = FlashFriendly();
  one_query_mha.max_q_len = 1;
  one_query_mha.kv_heads = one_query_mha.q_heads;
  EXPECT_EQ(SelectAttentionKernel(one_query_mha), AttentionKernel::kFlashVarlen);
}

TEST(AttentionKernelRule, FallsBackToChunkedWhenAnyConditionFails) {
  struct Case {
    const char* what;
    void (*spoil)(AttentionCallFacts&);
  };
  const Case cases[] = {
      {"libtorch < 2.6", [](AttentionCallFacts& f) { f.flash_built = false; }},
      {"CPU tensors", [](AttentionCallFacts& f) { f.on_cuda = false; }},
      {"float32", [](AttentionCallFacts& f) { f.dtype = c10::kFloat; }},
      {"GPU or build without flash", [](AttentionCallFacts& f) { f.flash_supported = false; }},
      {"head dim not a multiple of 8", [](AttentionCallFacts& f) { f.head_dim = 100; }},
      {"head dim over 256", [](AttentionCallFacts& f) { f.head_dim = 264; }},
      {"Hq not a multiple of Hkv", [](AttentionCallFacts& f) { f.kv_heads = 3; }},
      {"a span not bottom-right causal",
       [](AttentionCallFacts& f) { f.spans_bottom_right = false; }},
      {"one query with GQA", [](AttentionCallFacts& f) { f.max_q_len = 1; }},
  };
  for (const Case& c : cases) {
    AttentionCallFacts f = FlashFriendly();
    c.spoil(f);
    EXPECT_EQ(SelectAttentionKernel(f), AttentionKernel::kChunked) << c.what;
  }
}

TEST(AttentionKernelRule, DescribesCpuCallsAndTheirSpans) {
  at::Tensor q = at::zeros({20, 8, 64}, at::kBFloat16);
  at::Tensor k = at::zeros({20, 2, 64}, at::kBFloat16);
  // A local sequence and a CP query chunk [9, 12) of a sequence of 12 keys.
  AttentionCallFacts f = DescribeAttentionCall(q, k, {{0, 5, 0, 5, 0}, {5, 3, 8, 12, 9}});
  EXPECT_EQ(f.flash_built, compat::HasFlashVarlen());
  EXPECT_FALSE(f.on_cuda);
  EXPECT_FALSE(f.flash_supported);  // never probed off the GPU
  EXPECT_EQ(f.dtype, c10::kBFloat16);
  EXPECT_EQ(f.head_dim, 64);
  EXPECT_EQ(f.q_heads, 8);
  EXPECT_EQ(f.kv_heads, 2);
  EXPECT_TRUE(f.spans_bottom_right);
  EXPECT_EQ(f.max_q_len, 5);
  EXPECT_EQ(ChooseAttentionKernel(q, k, {{0, 5, 0, 5, 0}}), AttentionKernel::kChunked);
  // 3 queries from offset 9 need 12 keys; 11 is not a bottom-right mask.
  EXPECT_FALSE(DescribeAttentionCall(q, k, {{5, 3, 8, 11, 9}}).spans_bottom_right);
  EXPECT_EQ(AttentionKernelName(AttentionKernel::kFlashVarlen), "flash-varlen");
}

TEST(VarlenPacking, TrimsUnseenKeysAndCopiesSharedKeyPrefixes) {
  // A local sequence at rows [0, 3); a CP rank's two zig-zag chunks of one
  // gathered sequence (keys [10, 22)): positions [0, 2) and [9, 12).
  const std::vector<AttentionSpan> spans = {
      {0, 3, 0, 3, 0}, {3, 0, 0, 1, 0}, {3, 2, 10, 12, 0}, {5, 3, 10, 12, 9}};
  VarlenPacking p = PackSpansForVarlen(spans);
  EXPECT_EQ(p.q_rows, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(p.k_rows, (std::vector<int64_t>{0, 1, 2, 10, 11, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                            20, 21}));
  EXPECT_EQ(p.cu_q, (std::vector<int32_t>{0, 3, 5, 8}));
  EXPECT_EQ(p.cu_k, (std::vector<int32_t>{0, 3, 5, 17}));
  EXPECT_EQ(p.max_q, 3);
  EXPECT_EQ(p.max_k, 12);
}

TEST(FlashLse, RowsRoundTripThroughBothLibtorchLayouts) {
  VarlenPacking p = PackSpansForVarlen({{0, 3, 0, 3, 0}, {3, 1, 3, 1, 0}, {4, 2, 4, 2, 0}});
  at::Tensor rows = at::arange(6 * 4, at::kFloat).view({6, 4});
  at::Tensor unpadded = RowsToFlashLse(rows, p, FlashLseLayout::kHeadsByTokens);
  EXPECT_EQ(unpadded.sizes(), (std::vector<int64_t>{4, 6}));
  EXPECT_TRUE(at::equal(FlashLseToRows(unpadded, p), rows));
  at::Tensor padded = RowsToFlashLse(rows, p, FlashLseLayout::kBatchHeadsMaxQ);
  EXPECT_EQ(padded.sizes(), (std::vector<int64_t>{3, 4, 3}));
  // Batch 1 (one query, row 3): head 2 at [1, 2, 0].
  EXPECT_EQ(padded[1][2][0].item<float>(), rows[3][2].item<float>());
  EXPECT_TRUE(at::equal(FlashLseToRows(padded, p), rows));
}

// FlashAttention-2's varlen contract, densely: batch element b attends its
// packed queries to its packed keys with the bottom-right causal mask
// (query i sees key j iff j <= i + len_k - len_q); GQA by head groups.
void EmulateFlashVarlen(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const VarlenPacking& p, double scale, at::Tensor& out, at::Tensor& lse) {
  const int64_t groups = q.size(1) / k.size(1);
  for (size_t b = 1; b < p.cu_q.size(); ++b) {
    const int64_t q0 = p.cu_q[b - 1], lq = p.cu_q[b] - q0;
    const int64_t k0 = p.cu_k[b - 1], lk = p.cu_k[b] - k0;
    at::Tensor qs = q.narrow(0, q0, lq).transpose(0, 1);  // [H, lq, D]
    at::Tensor ks = k.narrow(0, k0, lk).transpose(0, 1).repeat_interleave(groups, 0);
    at::Tensor vs = v.narrow(0, k0, lk).transpose(0, 1).repeat_interleave(groups, 0);
    at::Tensor s = at::matmul(qs, ks.transpose(1, 2)) * scale;
    at::Tensor mask = at::ones({lq, lk}, at::kBool).triu(lk - lq + 1);
    s = s.masked_fill(mask, -std::numeric_limits<double>::infinity());
    out.narrow(0, q0, lq).copy_(at::matmul(s.softmax(-1), vs).transpose(0, 1));
    lse.narrow(0, q0, lq).copy_(s.logsumexp(-1).transpose(0, 1));
  }
}

TEST(VarlenPacking, BottomRightVarlenKernelOverThePackingEqualsCausalAttention) {
  at::Generator gen = compat::MakeCpuGenerator(5);
  auto randn = [&](int64_t t, int64_t h) {
    at::Tensor x = at::empty({t, h, 16}, at::kDouble);
    return x.normal_(0, 1, gen);
  };
  // Stream rows: local sequences [0, 7) and [7, 8); CP chunks at [8, 14).
  // Keys: the stream for local spans, a gathered sequence at [20, 32) of a
  // separate key tensor region for the chunks (offsets 0 and 8).
  at::Tensor q = randn(14, 6), k = randn(32, 2), v = randn(32, 2);
  const std::vector<AttentionSpan> spans = {
      {0, 7, 0, 7, 0}, {7, 1, 7, 1, 0}, {8, 2, 20, 12, 0}, {10, 4, 20, 12, 8}};
  const double scale = 0.25;
  at::Tensor ref_out = at::zeros({14, 6, 16}, at::kFloat);
  at::Tensor ref_lse = at::zeros({14, 6}, at::kFloat);
  CausalAttentionForward(q, k, v, spans, scale, 3, 1 << 20, ref_out, ref_lse);

  VarlenPacking p = PackSpansForVarlen(spans);
  auto rows = [](const std::vector<int64_t>& r) { return at::tensor(r, at::kLong); };
  at::Tensor packed_out = at::zeros({static_cast<int64_t>(p.q_rows.size()), 6, 16}, at::kDouble);
  at::Tensor packed_lse = at::zeros({static_cast<int64_t>(p.q_rows.size()), 6}, at::kDouble);
  EmulateFlashVarlen(q.index_select(0, rows(p.q_rows)), k.index_select(0, rows(p.k_rows)),
                     v.index_select(0, rows(p.k_rows)), p, scale, packed_out, packed_lse);
  at::Tensor out =
      at::zeros_like(ref_out).index_copy_(0, rows(p.q_rows), packed_out.to(at::kFloat));
  at::Tensor lse =
      at::zeros_like(ref_lse).index_copy_(0, rows(p.q_rows), packed_lse.to(at::kFloat));
  EXPECT_LT((out - ref_out).abs().max().item<double>(), 1e-5);
  EXPECT_LT((lse - ref_lse).abs().max().item<double>(), 1e-5);
}

TEST(AttentionBackends, SelectingBackendOnCpuIsTheChunkedPath) {
  at::Generator gen = compat::MakeCpuGenerator(9);
  at::Tensor q = at::empty({12, 4, 8}).normal_(0, 1, gen);
  at::Tensor k = at::empty({12, 2, 8}).normal_(0, 1, gen);
  at::Tensor v = at::empty({12, 2, 8}).normal_(0, 1, gen);
  AttentionLayout layout = LocalLayout({0, 5, 12});
  at::Tensor a = MakeChunkedAttention()->Attend(q, k, v, layout, 0);
  at::Tensor b = MakeSelectingAttention()->Attend(q, k, v, layout, 0);
  EXPECT_TRUE(at::equal(a, b));
  EXPECT_EQ(MakeDefaultAttention(c10::Device(c10::kCPU))->Name(), "chunked");
}

}  // namespace
}  // namespace skrull::model
