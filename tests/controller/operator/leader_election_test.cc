#include "controller/operator/leader_election.h"

#include <gtest/gtest.h>

#include <thread>

#include "controller/kube/memory_kube_api.h"

namespace skrull::controller {
namespace {

struct Clocks {
  LeaderElector::SteadyClock::time_point steady{};
  std::chrono::system_clock::time_point wall = std::chrono::system_clock::from_time_t(1764000000);
};

LeaderElector Elector(kube::KubeApi* api, const std::string& id, Clocks* c) {
  LeaseOptions o;
  o.ns = "skrull-system";
  o.identity = id;
  return LeaderElector(
      api, o, [c] { return c->steady; }, [c] { return c->wall; });
}

TEST(LeaderElection, OneReplicaLeadsAndTheOtherWaitsForExpiry) {
  kube::MemoryKubeApi api;
  Clocks ca, cb;
  LeaderElector a = Elector(&api, "pod-a", &ca);
  LeaderElector b = Elector(&api, "pod-b", &cb);
  EXPECT_TRUE(a.TryAcquireOrRenew().value());
  EXPECT_FALSE(b.TryAcquireOrRenew().value());
  // a renews; b, judging on its own clock, sees the lease change and waits.
  ca.steady += std::chrono::seconds(2);
  ca.wall += std::chrono::seconds(2);
  EXPECT_TRUE(a.TryAcquireOrRenew().value());
  cb.steady += std::chrono::seconds(14);
  EXPECT_FALSE(b.TryAcquireOrRenew().value());
  // a stops renewing: 15 s after b last saw a change, b takes over.
  cb.steady += std::chrono::seconds(15);
  EXPECT_TRUE(b.TryAcquireOrRenew().value());
  const kube::json lease = *api.Get(kube::LeasesResource(), "skrull-system", "skrull-controller");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "pod-b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  // a comes back: the lease changed under it, so it is not the leader.
  ca.steady += std::chrono::seconds(1);
  EXPECT_FALSE(a.TryAcquireOrRenew().value());
}

TEST(LeaderElection, TwoReplicasOnOneHostNameGetDistinctIdentitiesAndOneLeads) {
  // Two controllers started without POD_NAME on the same host.
  const std::string ia = UniqueIdentity("node-7"), ib = UniqueIdentity("node-7");
  EXPECT_NE(ia, ib);
  EXPECT_EQ(ia.rfind("node-7_", 0), 0u) << ia;
  EXPECT_EQ(ia.size(), std::string("node-7_").size() + 16);
  EXPECT_EQ(UniqueIdentity("").rfind("skrull-controller_", 0), 0u);
  kube::MemoryKubeApi api;
  Clocks ca, cb;
  LeaderElector a = Elector(&api, ia, &ca);
  LeaderElector b = Elector(&api, ib, &cb);
  EXPECT_TRUE(a.TryAcquireOrRenew().value());
  EXPECT_FALSE(b.TryAcquireOrRenew().value());
}

TEST(LeaderElection, ASkewedWallClockCannotStealTheLease) {
  kube::MemoryKubeApi api;
  Clocks ca, cb;
  LeaderElector a = Elector(&api, "pod-a", &ca);
  LeaderElector b = Elector(&api, "pod-b", &cb);
  ASSERT_TRUE(a.TryAcquireOrRenew().value());
  cb.wall += std::chrono::hours(1);  // b's wall clock is an hour ahead
  EXPECT_FALSE(b.TryAcquireOrRenew().value());
}

TEST(LeaderElection, ARaceOnTheLeaseHasOneWinner) {
  kube::MemoryKubeApi api;
  Clocks ca, cb;
  LeaderElector a = Elector(&api, "pod-a", &ca);
  LeaderElector b = Elector(&api, "pod-b", &cb);
  ASSERT_TRUE(a.TryAcquireOrRenew().value());
  // Both see it expired at once; the stale write loses with 409.
  ca.steady += std::chrono::seconds(20);
  cb.steady += std::chrono::seconds(20);
  ASSERT_FALSE(b.TryAcquireOrRenew().value());  // b observes first
  cb.steady += std::chrono::seconds(20);
  api.FailNext(kube::Verb::kReplace, 1, 409, "leases");
  EXPECT_FALSE(b.TryAcquireOrRenew().value());  // lost the race: not an error
}

TEST(LeaderElection, RunReleasesTheLeaseWhenStopped) {
  kube::MemoryKubeApi api;
  LeaseOptions o;
  o.ns = "skrull-system";
  o.identity = "pod-a";
  o.retry_period = std::chrono::seconds(1);
  LeaderElector a(&api, o);
  std::atomic<bool> stop{false};
  std::atomic<bool> led{false};
  std::thread t([&] { EXPECT_TRUE(a.Run(stop, [&] { led = true; })); });
  while (!led) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  t.join();
  const kube::json lease = *api.Get(kube::LeasesResource(), "skrull-system", "skrull-controller");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "");
}

}  // namespace
}  // namespace skrull::controller
