// CP attention against dense causal attention, values and gradients, on real
// Gloo process groups (forked ranks on loopback).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "scheduler/micro_batch_builder.h"
#include "scheduler/plan.h"
#include "trainer/dist/cp_attention.h"
#include "trainer/dist/process_groups.h"
#include "trainer/dist/rank_layout.h"
#include "trainer/dist/testing/fork_ranks.h"

namespace skrull::dist {
namespace {

constexpr int kHq = 4;
constexpr int kHkv = 2;
constexpr int kD = 8;

struct SeqSpec {
  int64_t length;
  int cp_rank;  // placement code: a CP rank, kDistributed or scheduler::SubGroupCode
};

scheduler::Plan OneMicroBatchPlan(int cp, const std::vector<SeqSpec>& seqs) {
  scheduler::Plan plan;
  plan.policy = "test";
  plan.topology = scheduler::Topology{1, cp};
  plan.ranks.resize(1);
  scheduler::MicroBatch mb;
  for (size_t i = 0; i < seqs.size(); ++i) {
    mb.sequences.push_back(scheduler::PlacedSequence::FromCode(
        static_cast<int64_t>(i), seqs[i].length, seqs[i].cp_rank, cp));
  }
  plan.ranks[0].micro_batches.push_back(mb);
  return plan;
}

// Dense causal attention in float64 (the reference). q [S,Hq,D], k/v [S,Hkv,D].
at::Tensor DenseCausal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t s = q.size(0), g = q.size(1) / k.size(1);
  at::Tensor kk = k.repeat_interleave(g, 1), vv = v.repeat_interleave(g, 1);
  at::Tensor scores =
      at::einsum("qhd,khd->hqk", {q, kk}) / std::sqrt(static_cast<double>(q.size(2)));
  at::Tensor mask = at::ones({s, s}, at::kBool).triu(1);
  scores = scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
  return at::einsum("hqk,khd->qhd", {scores.softmax(-1), vv});
}

struct Reference {
  std::vector<at::Tensor> q, k, v, w;       // inputs per sequence (float32)
  std::vector<at::Tensor> out, dq, dk, dv;  // float64 results per sequence
};

Reference MakeReference(const std::vector<SeqSpec>& seqs, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  Reference ref;
  for (const SeqSpec& s : seqs) {
    ref.q.push_back(at::randn({s.length, kHq, kD}, gen, at::kFloat));
    ref.k.push_back(at::randn({s.length, kHkv, kD}, gen, at::kFloat));
    ref.v.push_back(at::randn({s.length, kHkv, kD}, gen, at::kFloat));
    ref.w.push_back(at::randn({s.length, kHq, kD}, gen, at::kFloat));
    at::Tensor q = ref.q.back().to(at::kDouble).requires_grad_();
    at::Tensor k = ref.k.back().to(at::kDouble).requires_grad_();
    at::Tensor v = ref.v.back().to(at::kDouble).requires_grad_();
    at::Tensor out = DenseCausal(q, k, v);
    torch::autograd::backward({(out * ref.w.back().to(at::kDouble)).sum()});
    ref.out.push_back(out.detach());
    ref.dq.push_back(q.grad());
    ref.dk.push_back(k.grad());
    ref.dv.push_back(v.grad());
  }
  return ref;
}

// (sequence id, global position) of every row of a rank's stream.
std::vector<std::pair<int64_t, int64_t>> StreamRows(const scheduler::RankStream& s) {
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (size_t i = 0; i < s.local_seq_ids.size(); ++i) {
    for (int64_t p = 0; p < s.local_cu_seqlens[i + 1] - s.local_cu_seqlens[i]; ++p) {
      rows.emplace_back(s.local_seq_ids[i], p);
    }
  }
  for (const scheduler::DistributedSegment& seg : s.distributed) {
    for (const scheduler::ShardChunk& c : seg.Chunks(s.cp_rank)) {
      for (int64_t p = c.positions.begin; p < c.positions.end; ++p)
        rows.emplace_back(seg.seq_id, p);
    }
  }
  return rows;
}

at::Tensor Rows(const std::vector<at::Tensor>& per_seq,
                const std::vector<std::pair<int64_t, int64_t>>& rows, at::Tensor like) {
  if (rows.empty()) return at::zeros({0, like.size(1), like.size(2)}, per_seq[0].options());
  std::vector<at::Tensor> parts;
  for (const auto& [id, p] : rows) parts.push_back(per_seq[id].narrow(0, p, 1));
  return at::cat(parts, 0);
}

void ExpectClose(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  if (got.numel() == 0) return;
  const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  const double scale = std::max(1.0, want.abs().max().item<double>());
  EXPECT_LT(diff / scale, 2e-5) << what << ": max abs diff " << diff;
}

struct Case {
  int cp;
  std::vector<SeqSpec> seqs;
  CpAttentionOptions options;
  bool expect_exchange = true;
};

// Runs `c` on forked CP ranks; each rank checks its rows against the
// reference. `groups_of_rank[r]`: the groups CP rank r exchanges on (empty:
// one each when c.expect_exchange).
void RunCase(const Case& c, const std::vector<int>& groups_of_rank = {}) {
  const scheduler::Plan plan = OneMicroBatchPlan(c.cp, c.seqs);
  std::vector<std::vector<int32_t>> tokens;
  std::vector<scheduler::SequenceTokens> batch;
  for (const SeqSpec& s : c.seqs) tokens.emplace_back(s.length, 1);
  for (auto& t : tokens) {
    batch.push_back(scheduler::SequenceTokens{t.data(), t.data(), static_cast<int64_t>(t.size())});
  }
  Status st = testing::RunForkedRanks(c.cp, [&](int rank, int port) {
    at::set_num_threads(1);
    auto layout = testing::OneNodeLayout(rank, 1, c.cp);
    EXPECT_TRUE(layout.ok()) << layout.status();
    RendezvousOptions ro;
    ro.master_port = port;
    ro.timeout = std::chrono::seconds(60);
    auto groups = ProcessGroups::Create(*layout, ro);
    EXPECT_TRUE(groups.ok()) << groups.status();
    if (!groups.ok()) return 1;
    auto streams = scheduler::BuildRankStreams(plan, batch, 0, rank);
    EXPECT_TRUE(streams.ok()) << streams.status();
    const scheduler::RankStream& s = (*streams)[0];
    const Reference ref = MakeReference(c.seqs, 1234);
    const auto rows = StreamRows(s);
    at::Tensor q = Rows(ref.q, rows, ref.q[0]).requires_grad_();
    at::Tensor k = Rows(ref.k, rows, ref.k[0]).requires_grad_();
    at::Tensor v = Rows(ref.v, rows, ref.v[0]).requires_grad_();
    at::Tensor w = Rows(ref.w, rows, ref.w[0]);
    auto stats = std::make_shared<CpAttentionStats>();
    const CpExchangePlan xp = MakeCpExchangePlan(s, c.cp);
    CpGroupSet set{&(*groups)->cp(), {}};
    for (Group& g : (*groups)->cp_sub_groups()) set.sub_groups.push_back(&g);
    at::Tensor out = CpAttention(q, k, v, xp, set, c.options, stats);
    torch::autograd::backward({(out * w).sum()});
    ExpectClose(out, Rows(ref.out, rows, ref.out[0]), "rank " + std::to_string(rank) + " output");
    ExpectClose(q.grad(), Rows(ref.dq, rows, ref.dq[0]), "rank " + std::to_string(rank) + " dq");
    ExpectClose(k.grad(), Rows(ref.dk, rows, ref.dk[0]), "rank " + std::to_string(rank) + " dk");
    ExpectClose(v.grad(), Rows(ref.dv, rows, ref.dv[0]), "rank " + std::to_string(rank) + " dv");
    const int64_t exchanges = static_cast<int64_t>(xp.groups.size());
    EXPECT_EQ(exchanges,
              groups_of_rank.empty() ? (c.expect_exchange ? 1 : 0) : groups_of_rank[rank])
        << "rank " << rank;
    EXPECT_EQ(stats->distributed_calls, exchanges > 0 ? 1 : 0);
    EXPECT_EQ(stats->allgathers, exchanges * (c.options.save_gathered_kv ? 1 : 2));
    EXPECT_EQ(stats->reduce_scatters, exchanges);
    EXPECT_EQ(stats->padding_tokens, (c.options.save_gathered_kv ? 1 : 2) * xp.PaddingTokens());
    return ::testing::Test::HasFailure() ? 1 : 0;
  });
  EXPECT_TRUE(st.ok()) << st;
}

constexpr int kDist = scheduler::kDistributed;

TEST(CpAttention, MatchesDenseAttentionCp2MixedLocalAndDistributed) {
  // 7 and 13 are not divisible by 2*cp; local sequences on both ranks.
  RunCase({2, {{7, kDist}, {5, 0}, {3, 1}, {13, kDist}, {1, 1}}, {}});
}

TEST(CpAttention, MatchesDenseAttentionCp3ShortAndSingleTokenSequences) {
  // Length 2 < cp and a single token: some ranks hold no shard of them.
  RunCase({3, {{10, kDist}, {2, kDist}, {1, kDist}, {4, 2}, {6, 0}}, {}});
}

TEST(CpAttention, MatchesDenseAttentionCp3WhenARankHoldsNoTokens) {
  // One distributed token: ranks 1 and 2 have empty streams but must still
  // take part in the exchange.
  RunCase({3, {{1, kDist}}, {}});
}

TEST(CpAttention, MatchesDenseAttentionCp2AllDistributedWithSmallBlocks) {
  CpAttentionOptions o;
  o.block_rows = 3;  // several score blocks per chunk
  RunCase({2, {{17, kDist}, {9, kDist}}, o});
}

TEST(CpAttention, MatchesDenseAttentionCp2WhenRegatheringInBackward) {
  CpAttentionOptions o;
  o.save_gathered_kv = false;
  RunCase({2, {{11, kDist}, {4, 0}, {6, 1}}, o});
}

TEST(CpAttention, LocalOnlyMicroBatchExchangesNothing) {
  Case c{2, {{5, 0}, {7, 1}, {2, 1}}, {}};
  c.expect_exchange = false;
  RunCase(c);
}

TEST(CpAttention, MatchesDenseAttentionCp4WithSequencesOnGroupsOf1And2And4) {
  // One micro-batch on CP=4: local sequences (groups of 1), sequences on the
  // 2-groups {0,1} and {2,3}, and on all 4 ranks. Ranks 0..1 exchange on
  // their 2-group and the whole group, ranks 2..3 too.
  const int g01 = scheduler::SubGroupCode(0, 2), g23 = scheduler::SubGroupCode(2, 2);
  RunCase({4, {{13, g01}, {5, 0}, {21, kDist}, {9, g23}, {3, 3}, {4, g01}, {1, g23}, {6, 2}}, {}},
          {2, 2, 2, 2});
}

TEST(CpAttention, SubGroupOnlyMicroBatchLeavesOtherRanksOutOfTheExchange) {
  // Only ranks 2..3 share a sequence; ranks 0 and 1 attend locally and
  // communicate nothing. Regathering in backward exercises that path too.
  CpAttentionOptions o;
  o.save_gathered_kv = false;
  o.block_rows = 3;
  RunCase({4, {{11, scheduler::SubGroupCode(2, 2)}, {4, 0}, {7, 1}}, o}, {0, 0, 1, 1});
}

}  // namespace
}  // namespace skrull::dist
