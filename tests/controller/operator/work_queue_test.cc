#include "controller/operator/work_queue.h"

#include <gtest/gtest.h>

namespace skrull::controller {
namespace {

struct FakeSteady {
  WorkQueue::Clock::time_point t{};
  std::function<WorkQueue::Clock::time_point()> Fn() {
    return [this] { return t; };
  }
};

TEST(WorkQueue, AKeyIsQueuedOnceHowEverOftenItIsAdded) {
  WorkQueue q;
  q.Add("ns/a");
  q.Add("ns/a");
  q.Add("ns/b");
  EXPECT_EQ(q.Length(), 2u);
  EXPECT_EQ(q.Get(std::chrono::milliseconds(10)), "ns/a");
  EXPECT_EQ(q.Get(std::chrono::milliseconds(10)), "ns/b");
  EXPECT_EQ(q.Get(std::chrono::milliseconds(10)), std::nullopt);
}

TEST(WorkQueue, AKeyAddedWhileProcessedComesBackAfterDone) {
  WorkQueue q;
  q.Add("ns/a");
  ASSERT_EQ(q.Get(std::chrono::milliseconds(10)), "ns/a");
  q.Add("ns/a");  // an event while a worker holds it: no second worker
  EXPECT_EQ(q.Get(std::chrono::milliseconds(10)), std::nullopt);
  q.Done("ns/a");
  EXPECT_EQ(q.Get(std::chrono::milliseconds(10)), "ns/a");
}

TEST(WorkQueue, DelayedKeysWaitForTheirTime) {
  FakeSteady clock;
  WorkQueue q(clock.Fn());
  q.AddAfter("ns/a", std::chrono::seconds(30));
  EXPECT_EQ(q.Get(std::chrono::milliseconds(0)), std::nullopt);
  clock.t += std::chrono::seconds(30);
  EXPECT_EQ(q.Get(std::chrono::milliseconds(0)), "ns/a");
}

TEST(WorkQueue, RetriesBackOffExponentiallyUntilForgotten) {
  FakeSteady clock;
  WorkQueue q(clock.Fn());
  EXPECT_EQ(q.Retry("ns/a").count(), 1000);
  EXPECT_EQ(q.Retry("ns/a").count(), 2000);
  EXPECT_EQ(q.Retry("ns/a").count(), 4000);
  for (int i = 0; i < 20; ++i) q.Retry("ns/a");
  EXPECT_EQ(q.Retry("ns/a").count(), 300000);  // capped at 5 minutes
  q.Forget("ns/a");
  EXPECT_EQ(q.Retry("ns/a").count(), 1000);
}

TEST(WorkQueue, ShutdownWakesWaiters) {
  WorkQueue q;
  q.Shutdown();
  EXPECT_EQ(q.Get(), std::nullopt);
}

}  // namespace
}  // namespace skrull::controller
