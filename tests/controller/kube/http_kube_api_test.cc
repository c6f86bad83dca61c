// HttpKubeApi against FakeApiServer on loopback: every verb end to end.
#include "controller/kube/http_kube_api.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "common/file_util.h"
#include "controller/kube/fake_kubelet.h"
#include "tests/controller/kube/http_harness.h"
#include "tests/controller/kube/kube_test_util.h"
#include "tests/controller/kube/silent_server.h"

namespace skrull::kube {
namespace {

using testing::ConfigMapObject;
using testing::OwnedBy;
using testing::PodObject;
using testing::Rv;
using testing::SkrullJobObject;

using testing::HttpHarness;
using testing::kJobs;
using testing::kPods;

HttpHarness Start(KubeConfig config = {}, FakeApiServerOptions options = {}) {
  return testing::StartHttpHarness(std::move(config), std::move(options));
}

// A client reading its token from a file holding `token`, and a server
// that accepts only that token.
HttpHarness StartWithTokenFile(const std::string& token_file, const std::string& token) {
  EXPECT_TRUE(WriteFileAtomically(token_file, token + "\n").ok());
  KubeConfig config;
  config.bearer_token_file = token_file;
  FakeApiServerOptions options;
  options.token = token;
  return Start(config, options);
}

TEST(HttpKubeApi, CreateGetReplaceRoundTrip) {
  HttpHarness h = Start();
  StatusOr<json> created = h.api->Create(kJobs, "ns", SkrullJobObject("j", 2));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["kind"], "SkrullJob");
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());
  StatusOr<json> got = h.api->Get(kJobs, "ns", "j");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, *created);
  json next = *got;
  next["spec"]["replicas"] = 3;
  StatusOr<json> replaced = h.api->Replace(kJobs, "ns", "j", next, false);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ((*replaced)["spec"]["replicas"], 3);
  EXPECT_EQ((*replaced)["metadata"]["generation"], 2);
  EXPECT_EQ(*h.server->memory().Get(kJobs, "ns", "j"), *replaced) << "the server stored it";
}

TEST(HttpKubeApi, ConflictsAndAlreadyExistsComeBackAsSuch) {
  HttpHarness h = Start();
  json job = *h.api->Create(kJobs, "ns", SkrullJobObject("j"));
  StatusOr<json> again = h.api->Create(kJobs, "ns", SkrullJobObject("j"));
  EXPECT_TRUE(IsAlreadyExists(again.status())) << again.status();
  ASSERT_TRUE(
      h.api->Patch(kJobs, "ns", "j", PatchType::kMerge, {{"spec", {{"replicas", 5}}}}, false).ok());
  StatusOr<json> stale = h.api->Replace(kJobs, "ns", "j", job, false);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(IsConflict(stale.status())) << stale.status();
  EXPECT_NE(stale.status().message().find(
                "PUT /apis/skrull.io/v1alpha1/namespaces/ns/skrulljobs/j: HTTP 409 Conflict: "
                "Operation cannot be fulfilled"),
            std::string::npos)
      << stale.status();
  StatusOr<json> missing = h.api->Get(kJobs, "ns", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status();
}

TEST(HttpKubeApi, StatusSubresourceAndBothPatchTypes) {
  HttpHarness h = Start();
  ASSERT_TRUE(h.api->Create(kJobs, "ns", SkrullJobObject("j", 2)).ok());
  StatusOr<json> s = h.api->Patch(kJobs, "ns", "j", PatchType::kMerge,
                                  {{"status", {{"phase", "Running"}}}, {"spec", {{"replicas", 9}}}},
                                  /*status_subresource=*/true);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)["status"]["phase"], "Running");
  EXPECT_EQ((*s)["spec"]["replicas"], 2);
  json ops = json::array({{{"op", "test"}, {"path", "/spec/replicas"}, {"value", 2}},
                          {{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 4}}});
  StatusOr<json> j = h.api->Patch(kJobs, "ns", "j", PatchType::kJson, ops, false);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["spec"]["replicas"], 4);
  StatusOr<json> failed = h.api->Patch(kJobs, "ns", "j", PatchType::kJson, ops, false);
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument) << failed.status();
  json status_put = *j;
  status_put["status"] = {{"phase", "Succeeded"}};
  StatusOr<json> put = h.api->Replace(kJobs, "ns", "j", status_put, true);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ((*put)["status"]["phase"], "Succeeded");
}

TEST(HttpKubeApi, ListPagesThroughEverythingAndFillsKind) {
  KubeConfig config;
  config.list_page_size = 2;
  HttpHarness h = Start(config);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(h.server->memory()
                    .Create(kPods, "ns", PodObject("p" + std::to_string(i), {{"app", "x"}}))
                    .ok());
  }
  ASSERT_TRUE(h.server->memory().Create(kPods, "ns", PodObject("other")).ok());
  ASSERT_TRUE(h.server->memory().Create(kPods, "elsewhere", PodObject("p9", {{"app", "x"}})).ok());
  StatusOr<ListResult> list = h.api->List(kPods, "ns", "app=x");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 5u);
  EXPECT_EQ(list->items[0]["kind"], "Pod") << "the server leaves kind out of list items";
  EXPECT_EQ(list->items[0]["apiVersion"], "v1");
  EXPECT_FALSE(list->resource_version.empty());
  int list_requests = 0;
  for (const std::string& r : h.server->requests()) {
    if (r.rfind("GET /api/v1/namespaces/ns/pods?limit=2", 0) == 0) ++list_requests;
  }
  EXPECT_EQ(list_requests, 3);
  StatusOr<ListResult> all = h.api->List(kPods, "", "app=x");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 6u) << "ns \"\" lists all namespaces";
}

TEST(HttpKubeApi, ExpiredListStartsOverInOnePage) {
  KubeConfig config;
  config.list_page_size = 1;
  HttpHarness h = Start(config);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(h.server->memory().Create(kPods, "ns", PodObject("p" + std::to_string(i))).ok());
  }
  h.server->memory().FailNext(Verb::kList, 1, 410);  // as for an expired continue token
  StatusOr<ListResult> list = h.api->List(kPods, "ns", "");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 3u);
  const std::vector<std::string> requests = h.server->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].find("limit=1073741824"), std::string::npos) << requests[1];
}

TEST(HttpKubeApi, DeleteWithPropagation) {
  HttpHarness h = Start();
  json job = *h.api->Create(kJobs, "ns", SkrullJobObject("j"));
  ASSERT_TRUE(h.api->Create(kPods, "ns", OwnedBy(PodObject("p"), job)).ok());
  json kept_owner = *h.api->Create(kJobs, "ns", SkrullJobObject("k"));
  ASSERT_TRUE(h.api->Create(kPods, "ns", OwnedBy(PodObject("q"), kept_owner)).ok());
  ASSERT_TRUE(h.api->Delete(kJobs, "ns", "j", Propagation::kBackground).ok());
  EXPECT_EQ(h.api->Get(kPods, "ns", "p").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(h.api->Delete(kJobs, "ns", "k", Propagation::kOrphan).ok());
  StatusOr<json> orphan = h.api->Get(kPods, "ns", "q");
  ASSERT_TRUE(orphan.ok());
  EXPECT_FALSE((*orphan)["metadata"].contains("ownerReferences"));
  Status again = h.api->Delete(kJobs, "ns", "j", Propagation::kBackground);
  EXPECT_EQ(again.code(), StatusCode::kNotFound) << again;
  bool saw_orphan_query = false;
  for (const std::string& r : h.server->requests()) {
    saw_orphan_query |= r.find("skrulljobs/k?propagationPolicy=Orphan") != std::string::npos;
  }
  EXPECT_TRUE(saw_orphan_query);
}

TEST(HttpKubeApi, FakeKubeletMovesPodsThroughPhases) {
  HttpHarness h = Start();
  ASSERT_TRUE(h.api->Create(kPods, "ns", PodObject("p")).ok());
  StatusOr<json> pod = SetPodPhase(*h.api, "ns", "p", "Pending", "ImagePullBackOff");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ((*pod)["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ImagePullBackOff");
  pod = SetPodPhase(h.server->memory(), "ns", "p", "Failed", "OOMKilled", 137);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ((*h.api->Get(kPods, "ns",
                         "p"))["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            137);
  EXPECT_EQ(SetPodPhase(*h.api, "ns", "p", "Exploded").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(HttpKubeApi, ServerErrorsAreUnavailableWithTheServerMessage) {
  HttpHarness h = Start();
  h.server->FailNextRequests("GET", 1, 503);
  StatusOr<json> got = h.api->Get(kPods, "ns", "p");
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("HTTP 503 ServiceUnavailable: injected"), std::string::npos)
      << got.status();
  h.server->memory().FailNext(Verb::kCreate, 1, 500);
  StatusOr<json> created = h.api->Create(kPods, "ns", PodObject("p"));
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable) << created.status();
  EXPECT_TRUE(h.api->Create(kPods, "ns", PodObject("p")).ok());
}

TEST(HttpKubeApi, UnreachableServerIsUnavailableNamingIt) {
  HttpHarness h = Start();
  KubeConfig config;
  config.server = h.server->url();
  config.allow_insecure_http = true;
  h.server.reset();  // nobody listens there any more
  StatusOr<std::unique_ptr<HttpKubeApi>> api = HttpKubeApi::Create(config);
  ASSERT_TRUE(api.ok());
  StatusOr<json> got = (*api)->Get(kPods, "ns", "p");
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(
      got.status().message().find("GET /api/v1/namespaces/ns/pods/p (server " + config.server),
      std::string::npos)
      << got.status();
}

TEST(HttpKubeApi, BadConfigFailsAtCreate) {
  KubeConfig config;
  config.server = "ftp://x";
  EXPECT_EQ(HttpKubeApi::Create(config).status().code(), StatusCode::kInvalidArgument);
  config.server = "https://10.0.0.1:443";
  config.certificate_authority_file = "/nonexistent/ca.crt";
  StatusOr<std::unique_ptr<HttpKubeApi>> missing = HttpKubeApi::Create(config);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/ca.crt"), std::string::npos)
      << missing.status();
  config.certificate_authority_file = "";
  config.certificate_authority_data = "not pem";
  StatusOr<std::unique_ptr<HttpKubeApi>> bad = HttpKubeApi::Create(config);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("certificate authority"), std::string::npos)
      << bad.status();
  config.certificate_authority_data = "";
  config.bearer_token_file = "/nonexistent/token";
  EXPECT_EQ(HttpKubeApi::Create(config).status().code(), StatusCode::kNotFound);
}

TEST(HttpKubeApi, PlainHttpIsRefusedUnlessInsecureHttpIsAllowed) {
  KubeConfig config;
  config.server = "http://10.0.0.1:8080";
  config.bearer_token = "secret";
  StatusOr<std::unique_ptr<HttpKubeApi>> refused = HttpKubeApi::Create(config);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("server \"http://10.0.0.1:8080\" is plain http://"),
            std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("--insecure-http"), std::string::npos)
      << refused.status();
  config.allow_insecure_http = true;
  EXPECT_TRUE(HttpKubeApi::Create(config).ok());
}

// Waits until `server` has accepted a connection (the call is in flight).
bool WaitForConnection(const testing::SilentServer& server) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server.accepted() == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return server.accepted() > 0;
}

TEST(HttpKubeApi, CancelAllEndsACallTheServerNeverAnswers) {
  testing::SilentServer silent;
  ASSERT_NE(silent.port(), 0);
  KubeConfig config;
  config.server = silent.url();
  config.allow_insecure_http = true;
  config.request_timeout = std::chrono::seconds(30);
  StatusOr<std::unique_ptr<HttpKubeApi>> api = HttpKubeApi::Create(config);
  ASSERT_TRUE(api.ok()) << api.status();
  auto call = std::async(std::launch::async, [&] { return (*api)->Get(kPods, "ns", "p"); });
  ASSERT_TRUE(WaitForConnection(silent));
  EXPECT_EQ(call.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the server never answers: the call waits";
  const auto cancelled_at = std::chrono::steady_clock::now();
  (*api)->CancelAll();
  ASSERT_EQ(call.wait_for(std::chrono::seconds(1)), std::future_status::ready)
      << "a cancelled call must not wait for the 30 s request timeout";
  const auto took = std::chrono::steady_clock::now() - cancelled_at;
  EXPECT_LT(took, std::chrono::milliseconds(500))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  StatusOr<json> got = call.get();
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("cancelled: the controller is shutting down"),
            std::string::npos)
      << got.status();
  // Later calls fail at once, without connecting.
  const int connections = silent.accepted();
  EXPECT_NE((*api)->Get(kPods, "ns", "p").status().message().find("cancelled"), std::string::npos);
  EXPECT_EQ(silent.accepted(), connections);
}

TEST(HttpKubeApi, WrongTokenIsUnauthorized) {
  KubeConfig config;
  config.bearer_token = "wrong";
  FakeApiServerOptions options;
  options.token = "right";
  HttpHarness h = Start(config, options);
  StatusOr<json> got = h.api->Get(kPods, "ns", "p");
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("HTTP 401 Unauthorized"), std::string::npos)
      << got.status();
}

TEST(HttpKubeApi, RotatedTokenFileIsPickedUp) {
  const std::string token_file = testing::TempDir() + "/token";
  HttpHarness h = StartWithTokenFile(token_file, "token-1");
  ASSERT_TRUE(h.api->Create(kPods, "ns", PodObject("p")).ok());
  // The kubelet's way: a new file swapped in.
  ASSERT_TRUE(WriteFileAtomically(token_file, "token-2\n").ok());
  h.server->SetToken("token-2");
  StatusOr<json> got = h.api->Get(kPods, "ns", "p");
  EXPECT_TRUE(got.ok()) << got.status();
}

TEST(HttpKubeApi, UnauthorizedRereadsTheTokenFileOnceAndRetries) {
  const std::string token_file = testing::TempDir() + "/token";
  HttpHarness h = StartWithTokenFile(token_file, "token-A");
  ASSERT_TRUE(h.api->Create(kPods, "ns", PodObject("p")).ok());
  // Rewrite in place with the same size and mtime: the stat check cannot
  // tell, only the 401 can.
  struct stat before {};
  ASSERT_EQ(::stat(token_file.c_str(), &before), 0);
  {
    std::ofstream f(token_file, std::ios::trunc);
    f << "token-B\n";
  }
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, token_file.c_str(), times, 0), 0);
  h.server->SetToken("token-B");
  StatusOr<json> got = h.api->Get(kPods, "ns", "p");
  EXPECT_TRUE(got.ok()) << got.status();
  int unauthorized_then_retried = 0;
  for (const std::string& r : h.server->requests()) {
    if (r == "GET /api/v1/namespaces/ns/pods/p") ++unauthorized_then_retried;
  }
  EXPECT_EQ(unauthorized_then_retried, 2);
}

}  // namespace
}  // namespace skrull::kube
