// HttpKubeApi::Watch against FakeApiServer: streaming, bookmarks, resume,
// expiry, timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "tests/controller/kube/http_harness.h"
#include "tests/controller/kube/kube_test_util.h"

namespace skrull::kube {
namespace {

using testing::Describe;
using testing::PodObject;
using testing::Rv;
using Strings = std::vector<std::string>;

using testing::HttpHarness;
using testing::kPods;
using testing::WatchFrom;

HttpHarness Start(std::chrono::milliseconds bookmark_interval = std::chrono::milliseconds(50),
                  KubeConfig config = {}) {
  FakeApiServerOptions options;
  options.memory.bookmark_interval = bookmark_interval;
  return testing::StartHttpHarness(std::move(config), std::move(options));
}

TEST(HttpWatch, StreamsChangesThenBookmarks) {
  HttpHarness h = Start();
  MemoryKubeApi& kubelet = h.server->memory();
  const std::string rv = h.api->List(kPods, "ns", "")->resource_version;
  ASSERT_TRUE(kubelet.Create(kPods, "ns", PodObject("a")).ok());
  ASSERT_TRUE(
      kubelet.Patch(kPods, "ns", "a", PatchType::kMerge, {{"status", {{"phase", "Running"}}}}, true)
          .ok());
  ASSERT_TRUE(kubelet.Delete(kPods, "ns", "a", Propagation::kBackground).ok());
  std::vector<WatchEvent> events;
  Status s = h.api->Watch(kPods, "ns", WatchFrom(rv), [&](const WatchEvent& e) {
    events.push_back(e);
    return e.type != WatchEvent::Type::kBookmark;  // stop at the first bookmark
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Describe(events), (Strings{"ADDED a", "MODIFIED a", "DELETED a"}));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].object["status"]["phase"], "Running");
  EXPECT_EQ(events[3].type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(Rv(events[3].object), kubelet.resource_version());
}

TEST(HttpWatch, SeesLiveChangesWithASelector) {
  HttpHarness h = Start();
  MemoryKubeApi& kubelet = h.server->memory();
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(kubelet.Create(kPods, "ns", PodObject("other", {{"role", "x"}})).ok());
    EXPECT_TRUE(kubelet.Create(kPods, "ns", PodObject("w", {{"role", "worker"}})).ok());
  });
  std::vector<WatchEvent> events;
  Status s =
      h.api->Watch(kPods, "ns", WatchFrom("", "role in (worker,master)"), [&](const WatchEvent& e) {
        events.push_back(e);
        return e.type == WatchEvent::Type::kBookmark;
      });
  writer.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Describe(events), (Strings{"ADDED w"}));
}

TEST(HttpWatch, ResumesAfterADroppedStreamWithoutLosingEvents) {
  HttpHarness h = Start(std::chrono::seconds(60));
  MemoryKubeApi& kubelet = h.server->memory();
  std::string last_rv = kubelet.resource_version();
  std::mutex mu;
  Strings seen;
  Status first;
  std::thread watcher([&] {
    first = h.api->Watch(kPods, "ns", WatchFrom(last_rv), [&](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      last_rv = Rv(e.object);
      seen.push_back(e.object["metadata"]["name"]);
      return true;
    });
  });
  ASSERT_TRUE(kubelet.Create(kPods, "ns", PodObject("p1")).ok());
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!seen.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(h.server->DropWatches(), 1);
  watcher.join();
  EXPECT_FALSE(first.ok()) << "a cut stream is an error, not the server's normal end";
  EXPECT_EQ(first.code(), StatusCode::kUnavailable) << first;
  EXPECT_FALSE(IsExpired(first));
  // Changes while nobody watches.
  ASSERT_TRUE(kubelet.Create(kPods, "ns", PodObject("p2")).ok());
  ASSERT_TRUE(kubelet.Delete(kPods, "ns", "p1", Propagation::kBackground).ok());
  std::vector<WatchEvent> events;
  Status resumed = h.api->Watch(kPods, "ns", WatchFrom(last_rv), [&](const WatchEvent& e) {
    events.push_back(e);
    return events.size() < 2;
  });
  ASSERT_TRUE(resumed.ok()) << resumed;
  EXPECT_EQ(seen, (Strings{"p1"}));
  EXPECT_EQ(Describe(events), (Strings{"ADDED p2", "DELETED p1"}));
}

TEST(HttpWatch, TooOldResourceVersionIsExpiredFromTheStream) {
  HttpHarness h = Start();
  ASSERT_TRUE(h.server->memory().Create(kPods, "ns", PodObject("a")).ok());
  const std::string rv = h.server->memory().resource_version();
  ASSERT_TRUE(h.server->memory().Create(kPods, "ns", PodObject("b")).ok());
  h.server->memory().CompactHistory();
  Status s = h.api->Watch(kPods, "ns", WatchFrom(rv), [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsExpired(s)) << s;
  EXPECT_NE(s.message().find("too old resource version"), std::string::npos) << s;
}

TEST(HttpWatch, GoneAnswerToTheWatchRequestIsExpired) {
  HttpHarness h = Start();
  h.server->FailNextRequests("WATCH", 1, 410);
  Status s = h.api->Watch(kPods, "ns", WatchFrom("5"), [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsExpired(s)) << s;
}

TEST(HttpWatch, ErrorEventInTheStreamIsAnError) {
  HttpHarness h = Start();
  h.server->memory().FailNext(Verb::kWatch, 1, 500);
  Status s = h.api->Watch(kPods, "ns", WatchFrom(""), [](const WatchEvent&) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("HTTP 500"), std::string::npos) << s;
  EXPECT_FALSE(IsExpired(s));
}

TEST(HttpWatch, QuietWatchOutlivesTheRequestTimeout) {
  KubeConfig config;
  config.request_timeout = std::chrono::seconds(1);
  config.watch_timeout_margin = std::chrono::seconds(2);
  HttpHarness h = Start(std::chrono::seconds(60), config);
  WatchOptions o = WatchFrom("");
  o.timeout = std::chrono::seconds(3);
  std::vector<WatchEvent> events;
  const auto start = std::chrono::steady_clock::now();
  Status s = h.api->Watch(kPods, "ns", o, [&](const WatchEvent& e) {
    events.push_back(e);
    return true;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(s.ok()) << s << " after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
  EXPECT_GE(took, std::chrono::milliseconds(2900)) << "the server, not the client, ended it";
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kBookmark) << "a last bookmark before the end";
}

TEST(HttpWatch, StoppingFromTheCallbackEndsTheStream) {
  HttpHarness h = Start(std::chrono::seconds(60));
  ASSERT_TRUE(h.server->memory().Create(kPods, "ns", PodObject("a")).ok());
  const auto start = std::chrono::steady_clock::now();
  Status s = h.api->Watch(kPods, "ns", WatchFrom(""), [](const WatchEvent&) { return false; });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // The API stays usable, and the server's handler notices the client left.
  EXPECT_TRUE(h.api->Get(kPods, "ns", "a").ok());
}

TEST(HttpWatch, CancelWatchesEndsAQuietWatchButNotOtherCalls) {
  HttpHarness h = Start(std::chrono::seconds(60));
  ASSERT_TRUE(h.server->memory().Create(kPods, "ns", PodObject("a")).ok());
  std::atomic<int> events{0};
  WatchOptions o = WatchFrom("");
  o.timeout = std::chrono::seconds(60);
  std::thread cancel([&] {
    while (events.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    h.api->CancelWatches();
  });
  const auto start = std::chrono::steady_clock::now();
  Status s = h.api->Watch(kPods, "ns", o, [&](const WatchEvent&) {
    events.fetch_add(1);
    return true;  // the stream then stays quiet for 60 s
  });
  const auto took = std::chrono::steady_clock::now() - start;
  cancel.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("cancelled: the controller is shutting down"), std::string::npos) << s;
  EXPECT_LT(took, std::chrono::seconds(2))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  // A new watch ends at once; ordinary calls still work (until CancelAll).
  EXPECT_FALSE(h.api->Watch(kPods, "ns", o, [](const WatchEvent&) { return true; }).ok());
  EXPECT_TRUE(h.api->Get(kPods, "ns", "a").ok());
}

TEST(HttpWatch, AllNamespaces) {
  HttpHarness h = Start();
  const std::string rv = h.server->memory().resource_version();
  ASSERT_TRUE(h.server->memory().Create(kPods, "a", PodObject("p1")).ok());
  ASSERT_TRUE(h.server->memory().Create(kPods, "b", PodObject("p2")).ok());
  std::vector<WatchEvent> events;
  Status s = h.api->Watch(kPods, "", WatchFrom(rv), [&](const WatchEvent& e) {
    events.push_back(e);
    return Describe(events).size() < 2;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Describe(events), (Strings{"ADDED p1", "ADDED p2"}));
}

}  // namespace
}  // namespace skrull::kube
