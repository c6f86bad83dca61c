// Torch-light unit tests: the DP x CP rank layout and gradient bucketing.
#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include "trainer/dist/c10d_collectives.h"
#include "trainer/dist/rank_layout.h"

namespace skrull::dist {
namespace {

TEST(RankLayout, RankIsDpRankTimesCpPlusCpRank) {
  auto l = MakeRankLayout(5, 6, 2, 3);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->dp_rank, 1);
  EXPECT_EQ(l->cp_rank, 2);
  EXPECT_EQ(l->cp_group, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(l->dp_group, (std::vector<int>{2, 5}));
  EXPECT_EQ(l->Describe(), "rank 5 (dp 1, cp 2)");
}

TEST(RankLayout, EveryRankIsInExactlyOneCpAndOneDpGroup) {
  for (int dp : {1, 2, 3}) {
    for (int cp : {1, 2, 4}) {
      std::vector<int> cp_seen(dp * cp, 0), dp_seen(dp * cp, 0);
      for (int r = 0; r < dp * cp; ++r) {
        auto l = MakeRankLayout(r, dp * cp, dp, cp);
        ASSERT_TRUE(l.ok());
        EXPECT_EQ(l->cp_group[l->cp_rank], r);
        EXPECT_EQ(l->dp_group[l->dp_rank], r);
        if (l->cp_rank == 0) {
          for (int m : l->cp_group) ++cp_seen[m];
        }
        if (l->dp_rank == 0) {
          for (int m : l->dp_group) ++dp_seen[m];
        }
      }
      for (int r = 0; r < dp * cp; ++r) {
        EXPECT_EQ(cp_seen[r], 1);
        EXPECT_EQ(dp_seen[r], 1);
      }
    }
  }
}

TEST(RankLayout, DpTimesCpMustEqualTheWorld) {
  auto l = MakeRankLayout(0, 4, 3, 1);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(),
            "spec.parallelism: dataParallel x contextParallel = 3 x 1 = 3 must equal the world "
            "size (nodes x procsPerNode = 4)");
}

TEST(PlanBuckets, PacksInOrderAndSplitsOnDtypeAndSize) {
  std::vector<at::Tensor> t = {at::zeros({4}),
                               at::zeros({4}),
                               at::zeros({100}),
                               at::zeros({2}, at::kDouble),
                               at::zeros({2}, at::kDouble),
                               at::zeros({1})};
  auto b = PlanBuckets(t, 40);
  EXPECT_EQ(b, (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3, 4}, {5}}));
}

}  // namespace
}  // namespace skrull::dist
