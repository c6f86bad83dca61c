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
  api::JobSpec job;
  job.training.collective_timeout_seconds = 3600;
  const RendezvousOptions ro = RendezvousOptionsFor(env, CommBackend::kNccl, job);
  EXPECT_EQ(ro.master_addr, "10.0.0.7");
  EXPECT_EQ(ro.master_port, 29511);
  EXPECT_EQ(ro.timeout, std::chrono::seconds(42));
  // Collectives wait spec.training.collectiveTimeoutSeconds, not the
  // rendezvous deadline (a rank 0 writing a large checkpoint outlasts 300 s).
  EXPECT_EQ(ro.collective_timeout, std::chrono::seconds(3600));
  EXPECT_EQ(RendezvousOptionsFor(env, CommBackend::kGloo, api::JobSpec()).collective_timeout,
            std::chrono::minutes(30));
  EXPECT_EQ(ro.gloo_interface, "eth1");
  EXPECT_EQ(ro.backend, CommBackend::kNccl);
}

TEST(TrainingBackend, IsNcclOnlyForARankOnAGpuInABuildWithNccl) {
  RankDevice gpu;
  gpu.cuda = true;
  EXPECT_EQ(TrainingBackend(gpu), NcclAvailable() ? CommBackend::kNccl : CommBackend::kGloo);
  EXPECT_EQ(TrainingBackend(RankDevice()), CommBackend::kGloo);
}

}  // namespace
}  // namespace skrull::dist
