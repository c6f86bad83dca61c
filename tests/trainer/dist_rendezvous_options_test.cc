// RendezvousOptionsFor / TrainingBackend: the one place a rank's rendezvous
// options are built (training and --profile both use it).
#include <gtest/gtest.h>

#include "trainer/dist/process_groups.h"

namespace skrull::dist {
namespace {

TEST(RendezvousOptionsFor, TakesEveryRendezvousFieldFromTheRankEnvironment) {
  RankEnv env;
  env.master_addr = "10.0.0.7";
  env.master_port = 29511;
  env.rendezvous_timeout_seconds = 42;
  env.gloo_interface = "eth1";
  const RendezvousOptions ro = RendezvousOptionsFor(env, CommBackend::kNccl);
  EXPECT_EQ(ro.master_addr, "10.0.0.7");
  EXPECT_EQ(ro.master_port, 29511);
  EXPECT_EQ(ro.timeout, std::chrono::seconds(42));
  EXPECT_EQ(ro.gloo_interface, "eth1");
  EXPECT_EQ(ro.backend, CommBackend::kNccl);
}

TEST(TrainingBackend, IsNcclOnlyForAGpuJobOffCpuInABuildWithNccl) {
  api::JobSpec job;
  job.resources.gpus_per_proc = 1;
  EXPECT_EQ(TrainingBackend(job, "auto"),
            NcclAvailable() ? CommBackend::kNccl : CommBackend::kGloo);
  EXPECT_EQ(TrainingBackend(job, "cpu"), CommBackend::kGloo);
  job.resources.gpus_per_proc = 0;
  EXPECT_EQ(TrainingBackend(job, "auto"), CommBackend::kGloo);
}

}  // namespace
}  // namespace skrull::dist
