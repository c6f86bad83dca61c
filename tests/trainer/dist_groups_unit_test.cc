// Torch-light unit tests: gradient bucketing (the rank layout: dist_rank_layout_test).
#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include "trainer/dist/c10d_collectives.h"

namespace skrull::dist {
namespace {

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
