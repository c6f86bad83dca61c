#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "controller/kube/memory_kube_api.h"
#include "tests/controller/kube/kube_test_util.h"

namespace skrull::kube {
namespace {

using testing::Describe;
using testing::kPods;
using testing::OwnedBy;
using testing::PodObject;
using testing::Rv;
using testing::SkrullJobObject;
using testing::WatchFrom;

using Strings = std::vector<std::string>;

// Collects events until `n` non-bookmark events arrived (then stops the watch).
struct Collector {
  size_t n;
  std::vector<WatchEvent> events;
  size_t seen = 0;
  bool operator()(const WatchEvent& e) {
    events.push_back(e);
    if (e.type != WatchEvent::Type::kBookmark) ++seen;
    return seen < n;
  }
};

Status WatchN(MemoryKubeApi& api, const WatchOptions& o, size_t n, std::vector<WatchEvent>* out,
              const std::string& ns = "ns") {
  Collector c{n, {}};
  Status s = api.Watch(kPods, ns, o, [&c](const WatchEvent& e) { return c(e); });
  *out = c.events;
  return s;
}

TEST(MemoryWatch, ReplaysChangesAfterTheListResourceVersion) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("before")).ok());
  const std::string list_rv = api.List(kPods, "ns", "")->resource_version;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("a")).ok());
  ASSERT_TRUE(api.Create(kPods, "other", PodObject("elsewhere")).ok());
  ASSERT_TRUE(
      api.Patch(kPods, "ns", "a", PatchType::kMerge, {{"status", {{"phase", "Running"}}}}, true)
          .ok());
  ASSERT_TRUE(api.Delete(kPods, "ns", "before", Propagation::kBackground).ok());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(WatchN(api, WatchFrom(list_rv), 3, &events).ok());
  EXPECT_EQ(Describe(events), (Strings{"ADDED a", "MODIFIED a", "DELETED before"}));
  EXPECT_EQ(events[1].object["status"]["phase"], "Running");
  EXPECT_EQ(Rv(events[2].object), api.resource_version()) << "a delete has its own version";
}

TEST(MemoryWatch, NoResourceVersionStartsWithTheCurrentState) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("b")).ok());
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("a")).ok());
  ASSERT_TRUE(api.Delete(kPods, "ns", "b", Propagation::kBackground).ok());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(WatchN(api, WatchFrom(""), 1, &events).ok());
  EXPECT_EQ(Describe(events), (Strings{"ADDED a"}));
}

TEST(MemoryWatch, AllNamespacesWithEmptyNamespace) {
  MemoryKubeApi api;
  const std::string rv = api.resource_version();
  ASSERT_TRUE(api.Create(kPods, "a", PodObject("p1")).ok());
  ASSERT_TRUE(api.Create(kPods, "b", PodObject("p2")).ok());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(WatchN(api, WatchFrom(rv), 2, &events, "").ok());
  EXPECT_EQ(Describe(events), (Strings{"ADDED p1", "ADDED p2"}));
}

TEST(MemoryWatch, SelectorTransitionsBecomeAddedAndDeleted) {
  MemoryKubeApi api;
  const std::string rv = api.resource_version();
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("p", {{"role", "idle"}})).ok());
  auto relabel = [&](const std::string& role) {
    ASSERT_TRUE(api.Patch(kPods, "ns", "p", PatchType::kMerge,
                          {{"metadata", {{"labels", {{"role", role}}}}}}, false)
                    .ok());
  };
  relabel("worker");
  relabel("worker2");  // still not matching: nothing
  relabel("worker");
  ASSERT_TRUE(api.Patch(kPods, "ns", "p", PatchType::kMerge, {{"spec", {{"x", 1}}}}, false).ok());
  relabel("idle");
  std::vector<WatchEvent> events;
  ASSERT_TRUE(WatchN(api, WatchFrom(rv, "role=worker"), 5, &events).ok());
  EXPECT_EQ(Describe(events),
            (Strings{"ADDED p", "DELETED p", "ADDED p", "MODIFIED p", "DELETED p"}));
}

TEST(MemoryWatch, ResourceVersionOlderThanTheHistoryIsExpired) {
  MemoryKubeApiOptions o;
  o.history_limit = 3;
  MemoryKubeApi api(o);
  const std::string old_rv = api.resource_version();
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(api.Create(kPods, "ns", PodObject(std::to_string(i))).ok());
  std::vector<WatchEvent> events;
  Status s = WatchN(api, WatchFrom(old_rv), 1, &events);
  EXPECT_TRUE(IsExpired(s)) << s;
  EXPECT_NE(s.message().find("too old resource version"), std::string::npos) << s;
  EXPECT_TRUE(events.empty());
  // The last 3 events are still there.
  ASSERT_TRUE(WatchN(api, WatchFrom(std::to_string(std::stoi(old_rv) + 2)), 3, &events).ok());
  EXPECT_EQ(Describe(events), (Strings{"ADDED 2", "ADDED 3", "ADDED 4"}));
}

TEST(MemoryWatch, CompactionExpiresOlderVersions) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("a")).ok());
  const std::string rv = api.resource_version();
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("b")).ok());
  api.CompactHistory();
  std::vector<WatchEvent> events;
  EXPECT_TRUE(IsExpired(WatchN(api, WatchFrom(rv), 1, &events)));
  EXPECT_FALSE(IsExpired(WatchN(api, WatchFrom(""), 2, &events)));
}

TEST(MemoryWatch, BookmarksArriveWhenQuietAndCarryTheLatestVersion) {
  MemoryKubeApiOptions o;
  o.bookmark_interval = std::chrono::milliseconds(20);
  MemoryKubeApi api(o);
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("a")).ok());
  ASSERT_TRUE(api.Create(kPods, "other", PodObject("filtered-out")).ok());
  int bookmarks = 0;
  std::string bookmark_rv;
  Status s = api.Watch(kPods, "ns", WatchFrom(api.resource_version()), [&](const WatchEvent& e) {
    EXPECT_EQ(e.type, WatchEvent::Type::kBookmark);
    EXPECT_EQ(e.object["kind"], "Pod");
    bookmark_rv = e.object["metadata"]["resourceVersion"];
    return ++bookmarks < 2;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(bookmark_rv, api.resource_version());
}

TEST(MemoryWatch, ServerTimeoutEndsTheWatchWithABookmark) {
  MemoryKubeApiOptions o;
  o.bookmark_interval = std::chrono::seconds(60);
  MemoryKubeApi api(o);
  WatchOptions w = WatchFrom("");
  w.timeout = std::chrono::seconds(1);
  std::vector<WatchEvent> events;
  const auto start = std::chrono::steady_clock::now();
  Status s = api.Watch(kPods, "ns", w, [&](const WatchEvent& e) {
    events.push_back(e);
    return true;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(3));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kBookmark);
}

TEST(MemoryWatch, ResumingFromTheLastEventMissesNothing) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("seed")).ok());
  WatchOptions w = WatchFrom(api.resource_version());
  std::thread writer([&] {
    for (int i = 0; i < 30; ++i) {
      EXPECT_TRUE(api.Create(kPods, "ns", PodObject("p" + std::to_string(i))).ok());
    }
  });
  // Watches that each stop after 3 events, resuming from the last one seen.
  Strings names;
  while (names.size() < 30) {
    std::vector<WatchEvent> events;
    Status s = WatchN(api, w, 3, &events);
    ASSERT_TRUE(s.ok()) << s;
    for (const WatchEvent& e : events) {
      w.resource_version = Rv(e.object);
      if (e.type != WatchEvent::Type::kBookmark) names.push_back(e.object["metadata"]["name"]);
    }
  }
  writer.join();
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size()) << "no event twice";
  EXPECT_EQ(unique.size(), 30u);
}

TEST(MemoryWatch, DropWatchesCutsWatchesInProgress) {
  MemoryKubeApi api;
  Status result;
  std::thread watcher([&] {
    result = api.Watch(kPods, "ns", WatchFrom(""), [&](const WatchEvent&) { return true; });
  });
  while (api.DropWatches() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  watcher.join();
  EXPECT_EQ(result.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(IsExpired(result));
  std::vector<WatchEvent> events;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("a")).ok());
  EXPECT_TRUE(WatchN(api, WatchFrom(""), 1, &events).ok()) << "later watches work";
}

TEST(MemoryWatch, CallbacksMayCallBackIn) {
  MemoryKubeApi api;
  const std::string rv = api.resource_version();
  json job = *api.Create(SkrullJobsResource(), "ns", SkrullJobObject("j"));
  ASSERT_TRUE(api.Create(kPods, "ns", OwnedBy(PodObject("p"), job)).ok());
  std::vector<std::string> seen;
  Status s = api.Watch(kPods, "ns", WatchFrom(rv), [&](const WatchEvent& e) {
    // A reconciler reacting to the event: reads and writes from the callback.
    EXPECT_TRUE(api.Get(kPods, "ns", "p").ok());
    EXPECT_TRUE(
        api.Patch(kPods, "ns", "p", PatchType::kMerge, {{"status", {{"phase", "Running"}}}}, true)
            .ok());
    seen.push_back(WatchEventTypeName(e.type));
    return seen.size() < 2;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, (Strings{"ADDED", "MODIFIED"}));
}

TEST(MemoryWatch, GarbageCollectionIsWatched) {
  MemoryKubeApi api;
  json job = *api.Create(SkrullJobsResource(), "ns", SkrullJobObject("j"));
  ASSERT_TRUE(api.Create(kPods, "ns", OwnedBy(PodObject("p"), job)).ok());
  const std::string rv = api.resource_version();
  ASSERT_TRUE(api.Delete(SkrullJobsResource(), "ns", "j", Propagation::kBackground).ok());
  std::vector<WatchEvent> events;
  ASSERT_TRUE(WatchN(api, WatchFrom(rv), 1, &events).ok());
  EXPECT_EQ(Describe(events), (Strings{"DELETED p"}));
}

TEST(MemoryWatch, InjectedWatchErrorsAndBadVersions) {
  MemoryKubeApi api;
  api.FailNext(Verb::kWatch, 1, 410);
  std::vector<WatchEvent> events;
  EXPECT_TRUE(IsExpired(WatchN(api, WatchFrom(""), 1, &events)));
  EXPECT_EQ(WatchN(api, WatchFrom("abc"), 1, &events).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(WatchN(api, WatchFrom("", "a in ("), 1, &events).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skrull::kube
