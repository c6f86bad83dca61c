// dist::RankLayout, the one rank-layout type: the DP x CP and node x local
// arithmetic, the groups, and validation of spec.parallelism. Torch-free.
#include "trainer/dist/rank_layout.h"

#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "trainer/dist/testing/fork_ranks.h"

namespace skrull::dist {
namespace {

using testing::Parallelism;

TEST(RankLayout, DefaultIsRankZeroOfOneProcess) {
  const RankLayout l;
  EXPECT_EQ(l.rank(), 0);
  EXPECT_EQ(l.world_size(), 1);
  EXPECT_EQ(l.local_rank(), 0);
  EXPECT_EQ(l.node_rank(), 0);
  EXPECT_EQ(l.dp_rank(), 0);
  EXPECT_EQ(l.cp_rank(), 0);
  EXPECT_EQ(l.CpGroup(), (std::vector<int>{0}));
  EXPECT_EQ(l.DpGroup(), (std::vector<int>{0}));
}

TEST(RankLayout, RankIsDpRankTimesCpPlusCpRank) {
  auto l = RankLayout::Make(Parallelism(1, 6, 2, 3), 5);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->dp_rank(), 1);
  EXPECT_EQ(l->cp_rank(), 2);
  EXPECT_EQ(l->CpGroup(), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(l->DpGroup(), (std::vector<int>{2, 5}));
  EXPECT_EQ(l->Describe(), "rank 5 (dp 1, cp 2)");
}

TEST(RankLayout, RankIsNodeRankTimesProcsPerNodePlusLocalRank) {
  auto l = RankLayout::Make(Parallelism(3, 2, 3, 2), 3);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->world_size(), 6);
  EXPECT_EQ(l->node_rank(), 1);
  EXPECT_EQ(l->local_rank(), 1);
  EXPECT_EQ(RankLayout::GlobalRank(l->node_rank(), l->local_rank(), l->procs_per_node()), 3);
}

// Every rank of every small layout: a unique (dp, cp) and (node, local)
// position that maps back to it, and exactly one CP and one DP group.
TEST(RankLayout, EveryRankOfEverySmallLayoutMapsToAUniquePositionAndBack) {
  for (int nodes : {1, 2, 3}) {
    for (int dp : {1, 2, 3, 4}) {
      for (int cp : {1, 2, 3, 4}) {
        if ((dp * cp) % nodes != 0) continue;
        const api::ParallelismSpec p = Parallelism(nodes, dp * cp / nodes, dp, cp);
        SCOPED_TRACE(::testing::Message() << nodes << " nodes, dp " << dp << " x cp " << cp);
        std::set<std::pair<int, int>> grid, machine;
        std::vector<int> cp_seen(dp * cp, 0), dp_seen(dp * cp, 0);
        for (int r = 0; r < dp * cp; ++r) {
          auto l = RankLayout::Make(p, r);
          ASSERT_TRUE(l.ok()) << l.status();
          ASSERT_LT(l->dp_rank(), dp);
          ASSERT_LT(l->cp_rank(), cp);
          EXPECT_TRUE(grid.insert({l->dp_rank(), l->cp_rank()}).second);
          EXPECT_TRUE(machine.insert({l->node_rank(), l->local_rank()}).second);
          EXPECT_EQ(l->RankAt(l->dp_rank(), l->cp_rank()), r);
          EXPECT_EQ(RankLayout::GlobalRank(l->node_rank(), l->local_rank(), p.procs_per_node), r);
          EXPECT_EQ(l->CpGroup()[l->cp_rank()], r);
          EXPECT_EQ(l->DpGroup()[l->dp_rank()], r);
          if (l->cp_rank() == 0) {
            for (int m : l->CpGroup()) ++cp_seen[m];
          }
          if (l->dp_rank() == 0) {
            for (int m : l->DpGroup()) ++dp_seen[m];
          }
        }
        for (int r = 0; r < dp * cp; ++r) {
          EXPECT_EQ(cp_seen[r], 1) << "rank " << r;
          EXPECT_EQ(dp_seen[r], 1) << "rank " << r;
        }
      }
    }
  }
}

TEST(RankLayout, DpTimesCpMustEqualTheWorld) {
  auto l = RankLayout::Make(Parallelism(1, 4, 3, 1), 0);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l.status().message(),
            "spec.parallelism: dataParallel x contextParallel = 3 x 1 = 3 must equal the world "
            "size (nodes x procsPerNode = 4)");
}

TEST(RankLayout, RankMustBeInsideTheWorld) {
  auto l = RankLayout::Make(Parallelism(1, 6, 3, 2), 6);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(),
            "rank 6 is outside [0, 6) (spec.parallelism: nodes x procsPerNode)");
  EXPECT_FALSE(RankLayout::Make(Parallelism(1, 6, 3, 2), -1).ok());
}

TEST(RankLayout, DimensionBelowOneIsNamed) {
  auto l = RankLayout::Make(Parallelism(1, 2, 2, 0), 0);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(), "spec.parallelism.contextParallel: must be >= 1 (got 0)");
}

TEST(RankLayout, HugeDimensionsDoNotOverflowTheWorldSize) {
  // 65536 x 65536 wraps a 32-bit int to 0.
  auto l = RankLayout::Make(Parallelism(65536, 65536, 1, 1), 0);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("= 4294967296)"), std::string::npos) << l.status();
}

}  // namespace
}  // namespace skrull::dist
