#include "scheduler/micro_batch_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

namespace skrull::scheduler {
namespace {

// Global batch whose token values encode (sequence, position) so that any
// misplaced token is visible: input = id * 10000 + pos, target = -(that) - 1,
// except every third target is kIgnoreLabel.
class TestBatch {
 public:
  explicit TestBatch(const std::vector<int64_t>& lengths) {
    for (size_t id = 0; id < lengths.size(); ++id) {
      std::vector<int32_t> in, tg;
      for (int64_t p = 0; p < lengths[id]; ++p) {
        in.push_back(static_cast<int32_t>(id * 10000 + p));
        tg.push_back(p % 3 == 2 ? static_cast<int32_t>(kIgnoreLabel)
                                : -static_cast<int32_t>(id * 10000 + p) - 1);
      }
      inputs_.push_back(std::move(in));
      targets_.push_back(std::move(tg));
    }
  }
  std::vector<SequenceTokens> Tokens() const {
    std::vector<SequenceTokens> out;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      out.push_back(
          {inputs_[i].data(), targets_[i].data(), static_cast<int64_t>(inputs_[i].size())});
    }
    return out;
  }
  int64_t LabelTokens() const {
    int64_t n = 0;
    for (const auto& t : targets_)
      for (int32_t v : t) n += v != kIgnoreLabel;
    return n;
  }

 private:
  std::vector<std::vector<int32_t>> inputs_, targets_;
};

// Plan builder: PlanOf(dp, cp, {{mb0 of dp0, mb1 of dp0}, {mb0 of dp1}}) where a
// micro-batch is a list of (length, placement code: cp_rank, kDistributed or
// SubGroupCode); ids are assigned
// in order of appearance.
using MbSpec = std::vector<std::pair<int64_t, int>>;
Plan PlanOf(int dp, int cp, const std::vector<std::vector<MbSpec>>& ranks,
            std::vector<int64_t>* lengths) {
  Plan plan;
  plan.policy = "test";
  plan.topology = {dp, cp};
  plan.bucket_size_tokens = 1 << 30;
  int64_t id = 0;
  for (int d = 0; d < dp; ++d) {
    DpRankPlan rp;
    for (size_t i = 0; i < ranks[d].size(); ++i) {
      MicroBatch mb;
      mb.dp_rank = d;
      mb.index = static_cast<int>(i);
      for (auto [len, where] : ranks[d][i]) {
        mb.sequences.push_back(PlacedSequence::FromCode(id++, len, where, cp));
        lengths->push_back(len);
      }
      rp.micro_batches.push_back(mb);
    }
    plan.ranks.push_back(rp);
  }
  return plan;
}

std::vector<RankStream> Build(const Plan& plan, const TestBatch& batch, int dp, int cp) {
  StatusOr<std::vector<RankStream>> s = BuildRankStreams(plan, batch.Tokens(), dp, cp);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : std::vector<RankStream>{};
}

// The core property: over all (dp, cp) ranks and micro-batches, every token of
// every sequence appears exactly once, with its own position and label.
void ExpectEveryTokenExactlyOnce(const Plan& plan, const std::vector<int64_t>& lengths,
                                 const TestBatch& batch) {
  const int dp = plan.topology.dp, cp = plan.topology.cp;
  std::map<std::pair<int64_t, int64_t>, int> seen;  // (id, pos) -> count
  int64_t labels = 0;
  for (int d = 0; d < dp; ++d) {
    for (int c = 0; c < cp; ++c) {
      for (const RankStream& s : Build(plan, batch, d, c)) {
        ASSERT_EQ(s.input_ids.size(), static_cast<size_t>(s.tokens));
        ASSERT_EQ(s.targets.size(), static_cast<size_t>(s.tokens));
        ASSERT_EQ(s.positions.size(), static_cast<size_t>(s.tokens));
        labels += s.label_tokens;
        for (int64_t i = 0; i < s.tokens; ++i) {
          const int64_t id = s.input_ids[i] / 10000, pos = s.input_ids[i] % 10000;
          EXPECT_EQ(pos, s.positions[i])
              << "position of token " << i << " on rank " << d << "," << c;
          const int64_t want = pos % 3 == 2 ? kIgnoreLabel : -(id * 10000 + pos) - 1;
          EXPECT_EQ(s.targets[i], want);
          ++seen[{id, pos}];
        }
      }
    }
  }
  int64_t total = 0;
  for (size_t id = 0; id < lengths.size(); ++id) {
    for (int64_t p = 0; p < lengths[id]; ++p) {
      EXPECT_EQ((seen[{static_cast<int64_t>(id), p}]), 1) << "seq " << id << " pos " << p;
      ++total;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), total);
  EXPECT_EQ(labels, batch.LabelTokens());
}

TEST(MicroBatchBuilder, EveryTokenOnExactlyOneRankMixedPlan) {
  std::vector<int64_t> lengths;
  const int D = kDistributed;
  Plan plan = PlanOf(2, 4,
                     {{{{5, 0}, {3, 1}, {100, D}, {7, 3}, {1, D}}, {{2, D}, {9, 2}, {33, D}}},
                      {{{17, D}, {4, 0}, {4, 0}}, {}}},
                     &lengths);
  TestBatch batch(lengths);
  ExpectEveryTokenExactlyOnce(plan, lengths, batch);
}

TEST(MicroBatchBuilder, LengthsBelowCpAndLengthOne) {
  for (int cp : {2, 3, 4, 8}) {
    std::vector<int64_t> lengths;
    const int D = kDistributed;
    Plan plan = PlanOf(1, cp, {{{{1, D}, {2, D}, {3, D}, {1, 0}}}}, &lengths);
    TestBatch batch(lengths);
    ExpectEveryTokenExactlyOnce(plan, lengths, batch);
  }
}

TEST(MicroBatchBuilder, LocalSequencesAreWholeWithPositionsFromZero) {
  std::vector<int64_t> lengths;
  Plan plan = PlanOf(1, 2, {{{{3, 1}, {2, 1}, {4, 0}}}}, &lengths);
  TestBatch batch(lengths);
  std::vector<RankStream> s = Build(plan, batch, 0, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].local_cu_seqlens, (std::vector<int64_t>{0, 3, 5}));
  EXPECT_EQ(s[0].local_seq_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s[0].positions, (std::vector<int64_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(s[0].rank_local_tokens, (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(s[0].distributed.empty());
}

TEST(MicroBatchBuilder, DistributedShardsUseGlobalPositionsAfterLocalTokens) {
  std::vector<int64_t> lengths;
  Plan plan = PlanOf(1, 2, {{{{3, 0}, {8, kDistributed}}}}, &lengths);
  TestBatch batch(lengths);
  std::vector<RankStream> r0 = Build(plan, batch, 0, 0);
  std::vector<RankStream> r1 = Build(plan, batch, 0, 1);
  // Chunks of 8 over 4: [0,2) [2,4) [4,6) [6,8). Rank 0: 0 and 3; rank 1: 1 and 2.
  EXPECT_EQ(r0[0].positions, (std::vector<int64_t>{0, 1, 2, 0, 1, 6, 7}));
  EXPECT_EQ(r1[0].positions, (std::vector<int64_t>{2, 3, 4, 5}));
  ASSERT_EQ(r0[0].distributed.size(), 1u);
  const DistributedSegment& seg = r1[0].distributed[0];
  EXPECT_EQ(seg.seq_id, 1);
  EXPECT_EQ(seg.length, 8);
  EXPECT_EQ(seg.rank_chunks[0][0].stream_offset, 3);
  EXPECT_EQ(seg.rank_chunks[0][1].stream_offset, 5);
  EXPECT_EQ(seg.rank_chunks[1][0].stream_offset, 0);
  EXPECT_EQ(seg.rank_chunks[1][1].stream_offset, 2);
  EXPECT_EQ(r0[0].rank_distributed_tokens, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(r0[0].local_cu_seqlens, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(r1[0].local_cu_seqlens, (std::vector<int64_t>{0}));
}

TEST(MicroBatchBuilder, ShardUnionReconstructsEachSequenceFromDescriptors) {
  std::vector<int64_t> lengths;
  const int D = kDistributed;
  const int cp = 3;
  Plan plan = PlanOf(1, cp, {{{{2, 1}, {29, D}, {5, 0}, {4, D}}}}, &lengths);
  TestBatch batch(lengths);
  std::vector<std::vector<RankStream>> by_rank;
  for (int c = 0; c < cp; ++c) by_rank.push_back(Build(plan, batch, 0, c));
  // Any rank's descriptors locate every shard in every rank's stream.
  for (const DistributedSegment& seg : by_rank[0][0].distributed) {
    std::vector<int64_t> rebuilt(seg.length, -1);
    for (int r = 0; r < cp; ++r) {
      for (const ShardChunk& ch : seg.rank_chunks[r]) {
        for (int64_t k = 0; k < ch.positions.size(); ++k) {
          EXPECT_EQ(by_rank[r][0].positions[ch.stream_offset + k], ch.positions.begin + k);
          rebuilt[ch.positions.begin + k] = by_rank[r][0].input_ids[ch.stream_offset + k];
        }
      }
    }
    for (int64_t p = 0; p < seg.length; ++p) EXPECT_EQ(rebuilt[p], seg.seq_id * 10000 + p);
  }
}

TEST(MicroBatchBuilder, CpOneDegeneratesToWholeSequences) {
  std::vector<int64_t> lengths;
  Plan plan = PlanOf(1, 1, {{{{6, kDistributed}, {3, 0}, {1, kDistributed}}}}, &lengths);
  TestBatch batch(lengths);
  std::vector<RankStream> s = Build(plan, batch, 0, 0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].distributed.empty());
  EXPECT_EQ(s[0].local_cu_seqlens, (std::vector<int64_t>{0, 6, 9, 10}));
  EXPECT_EQ(s[0].positions, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2, 0}));
  ExpectEveryTokenExactlyOnce(plan, lengths, batch);
}

TEST(MicroBatchBuilder, EmptyMicroBatchGivesEmptyStream) {
  std::vector<int64_t> lengths;
  Plan plan = PlanOf(2, 2, {{{{3, 0}}, {{4, 1}}}, {{{5, kDistributed}}, {}}}, &lengths);
  TestBatch batch(lengths);
  std::vector<RankStream> s = Build(plan, batch, 1, 0);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[1].empty());
  EXPECT_EQ(s[1].local_cu_seqlens, (std::vector<int64_t>{0}));
}

TEST(MicroBatchBuilder, NeededSequenceIdsAreLocalPlusDistributedOfTheDpRank) {
  std::vector<int64_t> lengths;
  const int D = kDistributed;
  Plan plan = PlanOf(2, 2, {{{{3, 0}, {4, 1}, {5, D}}}, {{{6, 0}}}}, &lengths);
  EXPECT_EQ(NeededSequenceIds(plan, 0, 0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(NeededSequenceIds(plan, 0, 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(NeededSequenceIds(plan, 1, 1), (std::vector<int64_t>{}));
}

TEST(MicroBatchBuilder, OnlyNeededSequencesMustBeFilled) {
  std::vector<int64_t> lengths;
  Plan plan = PlanOf(1, 2, {{{{3, 0}, {4, 1}}}}, &lengths);
  TestBatch batch(lengths);
  std::vector<SequenceTokens> tokens = batch.Tokens();
  tokens[1] = SequenceTokens{};  // rank 0 does not need sequence 1
  EXPECT_TRUE(BuildRankStreams(plan, tokens, 0, 0).ok());
}

TEST(MicroBatchBuilder, LengthMismatchIsFailedPreconditionNamingTheSequence) {
  std::vector<int64_t> lengths;
  Plan plan = PlanOf(1, 1, {{{{3, 0}, {4, 0}}}}, &lengths);
  TestBatch batch({3, 5});
  auto s = BuildRankStreams(plan, batch.Tokens(), 0, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("sequence 1 has 5 tokens but the plan says 4"),
            std::string::npos)
      << s.status();
}

TEST(MicroBatchBuilder, EveryTokenOnExactlyOneRankWithSubGroups) {
  std::vector<int64_t> lengths;
  const int D = kDistributed;
  const int g01 = SubGroupCode(0, 2), g23 = SubGroupCode(2, 2);
  Plan plan = PlanOf(
      1, 4, {{{{100, g01}, {50, g23}, {33, D}, {5, 1}, {7, g23}, {3, g01}, {1, g23}}}}, &lengths);
  TestBatch batch(lengths);
  ExpectEveryTokenExactlyOnce(plan, lengths, batch);
}

TEST(MicroBatchBuilder, SubGroupShardsFormOneRegionPerGroupSmallestGroupFirst) {
  std::vector<int64_t> lengths;
  const int D = kDistributed;
  const int cp = 8;
  const int g45 = SubGroupCode(4, 2), g47 = SubGroupCode(4, 4);
  // ids: 0 all ranks, 1 on 4..7, 2 on 4..5, 3 local on 5, 4 on 4..5, 5 on 0..3.
  Plan plan =
      PlanOf(1, cp, {{{{16, D}, {40, g47}, {12, g45}, {3, 5}, {9, g45}, {8, SubGroupCode(0, 4)}}}},
             &lengths);
  TestBatch batch(lengths);
  EXPECT_EQ(NeededSequenceIds(plan, 0, 5), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(NeededSequenceIds(plan, 0, 0), (std::vector<int64_t>{0, 5}));
  std::vector<std::vector<RankStream>> by_rank;
  for (int c = 0; c < cp; ++c) by_rank.push_back(Build(plan, batch, 0, c));
  const RankStream& s = by_rank[5][0];
  // Rank 5: local 3, then the 2-group's 12 and 9, the 4-group's 40, then 16.
  std::vector<int64_t> ids, sizes;
  for (const DistributedSegment& seg : s.distributed) {
    ids.push_back(seg.seq_id);
    sizes.push_back(seg.group_size);
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 4, 1, 0}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 4, 8}));
  EXPECT_EQ(s.local_tokens, 3);
  EXPECT_EQ(s.tokens, 3 + 6 + 4 + 10 + 2);
  // Every member's descriptors locate the shards in that member's stream.
  for (const DistributedSegment& seg : s.distributed) {
    std::vector<int64_t> rebuilt(seg.length, -1);
    for (int r = seg.group_first; r < seg.group_first + seg.group_size; ++r) {
      for (const ShardChunk& ch : seg.Chunks(r)) {
        for (int64_t k = 0; k < ch.positions.size(); ++k) {
          rebuilt[ch.positions.begin + k] = by_rank[r][0].input_ids[ch.stream_offset + k];
        }
      }
    }
    for (int64_t p = 0; p < seg.length; ++p) EXPECT_EQ(rebuilt[p], seg.seq_id * 10000 + p);
  }
  // Rank 0 holds nothing of the groups on ranks 4..7.
  for (const DistributedSegment& seg : by_rank[0][0].distributed) {
    EXPECT_TRUE(seg.seq_id == 5 || seg.seq_id == 0) << seg.seq_id;
  }
  ExpectEveryTokenExactlyOnce(plan, lengths, batch);
}

}  // namespace
}  // namespace skrull::scheduler
