// ChooseRankDevice (rank_device.h): the one rule for a rank's device, which
// the trainer's tensors and the NCCL communicators both follow.
#include "trainer/dist/rank_device.h"

#include <gtest/gtest.h>

namespace skrull::dist {
namespace {

RankDevice Choose(const std::string& flag, int local_rank, int procs, int64_t visible,
                  int gpus_per_proc = 1) {
  StatusOr<RankDevice> d = ChooseRankDevice(flag, gpus_per_proc, local_rank, procs, visible);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : RankDevice();
}

Status Refusal(const std::string& flag, int local_rank, int procs, int64_t visible) {
  return ChooseRankDevice(flag, 1, local_rank, procs, visible).status();
}

TEST(ChooseRankDevice, EveryRankOfANodeGetsItsOwnGpuUnderAutoAndCuda) {
  for (const char* flag : {"auto", "cuda"}) {
    for (int local = 0; local < 8; ++local) {
      const RankDevice d = Choose(flag, local, 8, 8);
      EXPECT_TRUE(d.cuda) << flag;
      EXPECT_EQ(d.index, local) << flag;
      EXPECT_EQ(d.Name(), "cuda:" + std::to_string(local));
    }
  }
  // More GPUs visible than ranks: the first ones, one each.
  EXPECT_EQ(Choose("cuda", 1, 2, 8).index, 1);
}

TEST(ChooseRankDevice, RefusesToPutTwoRanksOfANodeOnOneGpu) {
  // The old rule (local rank modulo visible GPUs) put ranks 0 and 2 on cuda:0.
  for (const char* flag : {"auto", "cuda"}) {
    const Status s = Refusal(flag, 2, 4, 2);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("spec.parallelism.procsPerNode is 4"), std::string::npos) << s;
    EXPECT_NE(s.message().find("sees 2 GPU(s)"), std::string::npos) << s;
  }
  // One GPU for two ranks, even the rank that would get cuda:0.
  EXPECT_EQ(Refusal("cuda", 0, 2, 1).code(), StatusCode::kFailedPrecondition);
}

TEST(ChooseRankDevice, AnExplicitIndexIsForOneProcessPerNodeOnly) {
  const RankDevice d = Choose("cuda:3", 0, 1, 4);
  EXPECT_TRUE(d.cuda);
  EXPECT_EQ(d.index, 3);
  // Several ranks per node would all train on cuda:1 while NCCL binds each to
  // its own GPU ("Duplicate GPU detected").
  const Status s = Refusal("cuda:1", 1, 2, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("use --device cuda or auto"), std::string::npos) << s;
  EXPECT_EQ(Refusal("cuda:4", 0, 1, 4).code(), StatusCode::kFailedPrecondition);
}

TEST(ChooseRankDevice, AutoTrainsOnTheCpuForACpuJobOrWithoutAGpu) {
  const RankDevice cpu_job = Choose("auto", 1, 2, 8, /*gpus_per_proc=*/0);
  EXPECT_FALSE(cpu_job.cuda);
  EXPECT_FALSE(cpu_job.fell_back_to_cpu);
  const RankDevice no_gpu = Choose("auto", 1, 2, 0);
  EXPECT_FALSE(no_gpu.cuda);
  EXPECT_TRUE(no_gpu.fell_back_to_cpu) << "the trainer says so";
  EXPECT_EQ(no_gpu.Name(), "cpu");
  EXPECT_FALSE(Choose("cpu", 3, 4, 8).cuda);
}

TEST(ChooseRankDevice, CudaWithoutAGpuOrAnUnknownFlagIsRefused) {
  EXPECT_EQ(Refusal("cuda", 0, 1, 0).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Refusal("cuda:0", 0, 1, 0).code(), StatusCode::kFailedPrecondition);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:1234", "CUDA"}) {
    EXPECT_EQ(Refusal(bad, 0, 1, 8).code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace skrull::dist
