// Torch-light unit tests: gradient bucketing, which c10d call each CP
// exchange uses per backend, and the NCCL rank's GPU (the rank layout:
// dist_rank_layout_test).
#include <ATen/ATen.h>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "trainer/dist/c10d_collectives.h"
#include "trainer/dist/cp_exchange.h"
#include "trainer/dist/process_groups.h"
#include "trainer/dist/testing/fork_ranks.h"
#include "trainer/model/torch_compat.h"

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

Group GroupOf(CommBackend backend, int size) {
  Group g;
  g.name = "cp[dp=0]";
  g.backend = backend;
  g.size = size;
  return g;
}

TEST(CpExchange, NcclUsesNativeAllGatherAndReduceScatter) {
  const Group nccl = GroupOf(CommBackend::kNccl, 4);
  EXPECT_EQ(AllGatherMethodFor(nccl), ExchangeMethod::kNcclAllGatherBase);
  EXPECT_EQ(ReduceScatterMethodFor(nccl), ExchangeMethod::kNcclReduceScatterBase);
}

TEST(CpExchange, GlooKeepsListAllGatherAndAllToAllEmulation) {
  const Group gloo = GroupOf(CommBackend::kGloo, 2);
  EXPECT_EQ(AllGatherMethodFor(gloo), ExchangeMethod::kGlooAllGatherList);
  EXPECT_EQ(ReduceScatterMethodFor(gloo), ExchangeMethod::kGlooAllToAllSum);
  EXPECT_STREQ(ExchangeMethodName(ReduceScatterMethodFor(gloo)), "gloo alltoall + sum");
}

TEST(CpExchange, GroupOfOneRankCopiesWithoutCommunicating) {
  for (CommBackend backend : {CommBackend::kGloo, CommBackend::kNccl}) {
    Group one = GroupOf(backend, 1);  // no communicator: a c10d call would crash
    EXPECT_EQ(AllGatherMethodFor(one), ExchangeMethod::kLocalCopy);
    at::Tensor in = at::arange(6, at::kFloat).view({3, 2});
    at::Tensor out = at::zeros({3, 2});
    EXPECT_FALSE(StartAllGather(one, in, out).pending());
    EXPECT_TRUE(out.equal(in));
    out.zero_();
    EXPECT_FALSE(StartReduceScatterSum(one, in, out).pending());
    EXPECT_TRUE(out.equal(in));
  }
}

TEST(ProcessGroups, NcclWithoutAVisibleGpuFailsNamingWhatToCheck) {
  if (model::compat::CudaAvailable()) GTEST_SKIP() << "a GPU is visible: NCCL groups can be made";
  auto layout = testing::OneNodeLayout(0, 1, 1);
  ASSERT_TRUE(layout.ok()) << layout.status();
  RendezvousOptions o;
  o.backend = CommBackend::kNccl;
  auto groups = ProcessGroups::CreateWithStore(c10::make_intrusive<c10d::HashStore>(), *layout, o);
  ASSERT_FALSE(groups.ok());
  EXPECT_EQ(groups.status().code(), StatusCode::kFailedPrecondition) << groups.status();
  EXPECT_NE(groups.status().message().find("NCCL needs a GPU and none is visible"),
            std::string::npos)
      << groups.status();
  EXPECT_NE(groups.status().message().find("resources.gpusPerProc"), std::string::npos);
}

}  // namespace
}  // namespace skrull::dist
