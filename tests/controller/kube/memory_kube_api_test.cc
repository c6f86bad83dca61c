#include "controller/kube/memory_kube_api.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/controller/kube/kube_test_util.h"

namespace skrull::kube {
namespace {

using testing::ConfigMapObject;
using testing::kConfigMaps;
using testing::kJobs;
using testing::kPods;
using testing::OwnedBy;
using testing::PodObject;
using testing::Rv;
using testing::SkrullJobObject;

MemoryKubeApiOptions FixedClock() {
  MemoryKubeApiOptions o;
  o.now_rfc3339 = [] { return std::string("2025-01-02T03:04:05Z"); };
  return o;
}

TEST(MemoryKubeApi, CreateFillsServerFields) {
  MemoryKubeApi api(FixedClock());
  StatusOr<json> job = api.Create(kJobs, "ns", SkrullJobObject("j"));
  ASSERT_TRUE(job.ok()) << job.status();
  const json& meta = (*job)["metadata"];
  EXPECT_EQ((*job)["kind"], "SkrullJob");
  EXPECT_EQ((*job)["apiVersion"], "skrull.io/v1alpha1");
  EXPECT_EQ(meta["namespace"], "ns");
  EXPECT_EQ(meta["generation"], 1);
  EXPECT_EQ(meta["creationTimestamp"], "2025-01-02T03:04:05Z");
  EXPECT_FALSE(meta["uid"].get<std::string>().empty());
  EXPECT_EQ(Rv(*job), api.resource_version());
  StatusOr<json> got = api.Get(kJobs, "ns", "j");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, *job);
}

TEST(MemoryKubeApi, UidsAndResourceVersionsAreUnique) {
  MemoryKubeApi api;
  std::set<std::string> uids, rvs;
  for (int i = 0; i < 20; ++i) {
    StatusOr<json> cm = api.Create(kConfigMaps, "ns", ConfigMapObject("c" + std::to_string(i)));
    ASSERT_TRUE(cm.ok());
    uids.insert((*cm)["metadata"]["uid"].get<std::string>());
    rvs.insert(Rv(*cm));
  }
  EXPECT_EQ(uids.size(), 20u);
  EXPECT_EQ(rvs.size(), 20u);
}

TEST(MemoryKubeApi, GenerateNameMakesAFreshName) {
  MemoryKubeApi api;
  json cm = ConfigMapObject("");
  cm["metadata"].erase("name");
  cm["metadata"]["generateName"] = "run-";
  StatusOr<json> a = api.Create(kConfigMaps, "ns", cm);
  StatusOr<json> b = api.Create(kConfigMaps, "ns", cm);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string name = (*a)["metadata"]["name"];
  EXPECT_EQ(name.rfind("run-", 0), 0u) << name;
  EXPECT_EQ(name.size(), 9u);
  EXPECT_NE((*a)["metadata"]["name"], (*b)["metadata"]["name"]);
}

TEST(MemoryKubeApi, CreateOfAnExistingNameIsAlreadyExists) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("p")).ok());
  StatusOr<json> again = api.Create(kPods, "ns", PodObject("p"));
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(IsAlreadyExists(again.status())) << again.status();
  EXPECT_FALSE(IsConflict(again.status()));
  EXPECT_NE(again.status().message().find("POST /api/v1/namespaces/ns/pods: HTTP 409 "
                                          "AlreadyExists: pods \"p\" already exists"),
            std::string::npos)
      << again.status();
  EXPECT_TRUE(api.Create(kPods, "other", PodObject("p")).ok()) << "names are per namespace";
}

TEST(MemoryKubeApi, CreateRejectsWhatTheApiServerRejects) {
  MemoryKubeApi api;
  json with_rv = PodObject("p");
  with_rv["metadata"]["resourceVersion"] = "5";
  EXPECT_EQ(api.Create(kPods, "ns", with_rv).status().code(), StatusCode::kInvalidArgument);
  json other_ns = PodObject("p");
  other_ns["metadata"]["namespace"] = "b";
  EXPECT_EQ(api.Create(kPods, "a", other_ns).status().code(), StatusCode::kInvalidArgument);
  json no_name = PodObject("p");
  no_name["metadata"].erase("name");
  StatusOr<json> s = api.Create(kPods, "a", no_name);
  EXPECT_NE(s.status().message().find("HTTP 422 Invalid: metadata.name: Required value"),
            std::string::npos)
      << s.status();
  json wrong_kind = PodObject("p");
  wrong_kind["kind"] = "Service";
  EXPECT_EQ(api.Create(kPods, "a", wrong_kind).status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryKubeApi, MissingObjectIsNotFound) {
  MemoryKubeApi api;
  StatusOr<json> got = api.Get(kPods, "ns", "nope");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(),
            "GET /api/v1/namespaces/ns/pods/nope: HTTP 404 NotFound: pods \"nope\" not found");
  EXPECT_EQ(api.Delete(kPods, "ns", "nope", Propagation::kBackground).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(api.Replace(kPods, "ns", "nope", PodObject("nope"), false).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(
      api.Patch(kPods, "ns", "nope", PatchType::kMerge, json::object(), false).status().code(),
      StatusCode::kNotFound);
}

TEST(MemoryKubeApi, StaleResourceVersionIsAConflict) {
  MemoryKubeApi api;
  StatusOr<json> read = api.Create(kJobs, "ns", SkrullJobObject("j", 2));
  ASSERT_TRUE(read.ok());
  json first = *read;
  first["spec"]["replicas"] = 3;
  ASSERT_TRUE(api.Replace(kJobs, "ns", "j", first, false).ok());
  json second = *read;  // still carries the old resourceVersion
  second["spec"]["replicas"] = 4;
  StatusOr<json> stale = api.Replace(kJobs, "ns", "j", second, false);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(IsConflict(stale.status())) << stale.status();
  EXPECT_NE(stale.status().message().find("the object has been modified"), std::string::npos);
  EXPECT_EQ((*api.Get(kJobs, "ns", "j"))["spec"]["replicas"], 3);
  // A merge patch carrying the stale resourceVersion is a precondition too.
  StatusOr<json> patched = api.Patch(
      kJobs, "ns", "j", PatchType::kMerge,
      {{"metadata", {{"resourceVersion", Rv(*read)}}}, {"spec", {{"replicas", 5}}}}, false);
  EXPECT_TRUE(IsConflict(patched.status())) << patched.status();
}

TEST(MemoryKubeApi, ReplaceWithoutResourceVersionIsUnconditional) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kJobs, "ns", SkrullJobObject("j", 2)).ok());
  StatusOr<json> r = api.Replace(kJobs, "ns", "j", SkrullJobObject("j", 7), false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)["spec"]["replicas"], 7);
}

TEST(MemoryKubeApi, GenerationMovesOnlyWithTheSpec) {
  MemoryKubeApi api;
  json job = *api.Create(kJobs, "ns", SkrullJobObject("j", 2));
  job["metadata"]["labels"] = {{"a", "b"}};
  job = *api.Replace(kJobs, "ns", "j", job, false);
  EXPECT_EQ(job["metadata"]["generation"], 1) << "a label is metadata";
  job = *api.Patch(kJobs, "ns", "j", PatchType::kMerge, {{"status", {{"phase", "Running"}}}}, true);
  EXPECT_EQ(job["metadata"]["generation"], 1) << "status is not spec";
  job = *api.Patch(kJobs, "ns", "j", PatchType::kMerge, {{"spec", {{"replicas", 4}}}}, false);
  EXPECT_EQ(job["metadata"]["generation"], 2);
}

TEST(MemoryKubeApi, MainWritesIgnoreStatusAndStatusWritesIgnoreTheRest) {
  MemoryKubeApi api;
  json job = SkrullJobObject("j", 2);
  job["status"] = {{"phase", "Bogus"}};
  job = *api.Create(kJobs, "ns", job);
  EXPECT_FALSE(job.contains("status")) << "create drops status";
  job["status"] = {{"phase", "Running"}};
  job["spec"]["replicas"] = 9;
  json after = *api.Replace(kJobs, "ns", "j", job, /*status_subresource=*/true);
  EXPECT_EQ(after["status"]["phase"], "Running");
  EXPECT_EQ(after["spec"]["replicas"], 2) << "a status write ignores the spec";
  after["status"]["phase"] = "Failed";
  after["spec"]["replicas"] = 3;
  after = *api.Replace(kJobs, "ns", "j", after, /*status_subresource=*/false);
  EXPECT_EQ(after["status"]["phase"], "Running") << "a main write ignores status";
  EXPECT_EQ(after["spec"]["replicas"], 3);
}

TEST(MemoryKubeApi, ResourcesWithoutStatusSubresourceKeepStatusAndRefuseSlashStatus) {
  MemoryKubeApi api;
  json lease = {{"metadata", {{"name", "l"}}}, {"spec", {{"holderIdentity", "a"}}}};
  ASSERT_TRUE(api.Create(LeasesResource(), "ns", lease).ok());
  StatusOr<json> s =
      api.Patch(LeasesResource(), "ns", "l", PatchType::kMerge, {{"status", {{"x", 1}}}}, true);
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound) << s.status();
}

TEST(MemoryKubeApi, PodsStartPending) {
  MemoryKubeApi api;
  StatusOr<json> pod = api.Create(kPods, "ns", PodObject("p"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["status"]["phase"], "Pending");
}

TEST(MemoryKubeApi, WriteThatChangesNothingKeepsTheResourceVersion) {
  MemoryKubeApi api;
  json job = *api.Create(kJobs, "ns", SkrullJobObject("j"));
  const std::string rv = api.resource_version();
  json again = *api.Replace(kJobs, "ns", "j", job, false);
  EXPECT_EQ(Rv(again), Rv(job));
  again = *api.Patch(kJobs, "ns", "j", PatchType::kMerge, {{"spec", {{"replicas", 2}}}}, false);
  EXPECT_EQ(Rv(again), Rv(job));
  EXPECT_EQ(api.resource_version(), rv);
}

TEST(MemoryKubeApi, JsonPatchAppliesAndFailedTestIsInvalid) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kJobs, "ns", SkrullJobObject("j", 2)).ok());
  json ops = json::array({{{"op", "test"}, {"path", "/spec/replicas"}, {"value", 2}},
                          {{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 3}},
                          {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"a", "b"}}}},
                          {{"op", "add"}, {"path", "/spec/extra"}, {"value", "x"}},
                          {{"op", "remove"}, {"path", "/spec/extra"}}});
  StatusOr<json> patched = api.Patch(kJobs, "ns", "j", PatchType::kJson, ops, false);
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["replicas"], 3);
  EXPECT_EQ((*patched)["metadata"]["labels"]["a"], "b");
  EXPECT_FALSE((*patched)["spec"].contains("extra"));
  json failing = json::array({{{"op", "test"}, {"path", "/spec/replicas"}, {"value", 2}}});
  StatusOr<json> failed = api.Patch(kJobs, "ns", "j", PatchType::kJson, failing, false);
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("HTTP 422"), std::string::npos) << failed.status();
  json missing = json::array({{{"op", "remove"}, {"path", "/spec/nothing"}}});
  EXPECT_NE(api.Patch(kJobs, "ns", "j", PatchType::kJson, missing, false)
                .status()
                .message()
                .find("HTTP 422"),
            std::string::npos);
}

TEST(MemoryKubeApi, MergePatchNullDeletesAKey) {
  MemoryKubeApi api;
  json job = SkrullJobObject("j");
  job["metadata"]["labels"] = {{"a", "1"}, {"b", "2"}};
  ASSERT_TRUE(api.Create(kJobs, "ns", job).ok());
  StatusOr<json> p = api.Patch(kJobs, "ns", "j", PatchType::kMerge,
                               {{"metadata", {{"labels", {{"a", nullptr}, {"c", "3"}}}}}}, false);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)["metadata"]["labels"], json({{"b", "2"}, {"c", "3"}}));
}

TEST(MemoryKubeApi, ListFiltersByNamespaceAndSelector) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "a", PodObject("p1", {{"job", "x"}})).ok());
  ASSERT_TRUE(api.Create(kPods, "a", PodObject("p2", {{"job", "y"}})).ok());
  ASSERT_TRUE(api.Create(kPods, "b", PodObject("p3", {{"job", "x"}})).ok());
  StatusOr<ListResult> list = api.List(kPods, "a", "job=x");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]["metadata"]["name"], "p1");
  EXPECT_EQ(list->resource_version, api.resource_version());
  EXPECT_EQ(api.List(kPods, "", "job=x")->items.size(), 2u) << "ns \"\" = all namespaces";
  EXPECT_EQ(api.List(kPods, "a", "")->items.size(), 2u);
  EXPECT_EQ(api.List(kPods, "a", "job in (").status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryKubeApi, ListPagesCoverEveryObjectOnce) {
  MemoryKubeApi api;
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(api.Create(kPods, "ns", PodObject("p" + std::to_string(i), {{"k", "v"}})).ok());
  }
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("other")).ok());
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  std::string first_rv;
  do {
    StatusOr<ListPageResult> page = api.ListPage(kPods, "ns", "k=v", 3, token);
    ASSERT_TRUE(page.ok()) << page.status();
    if (pages == 0) first_rv = page->resource_version;
    EXPECT_EQ(page->resource_version, first_rv);
    EXPECT_LE(page->items.size(), 3u);
    for (const json& p : page->items) names.push_back(p["metadata"]["name"]);
    token = page->continue_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}));
}

TEST(MemoryKubeApi, OldOrMalformedContinueTokenIsRefused) {
  MemoryKubeApi api;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(api.Create(kPods, "ns", PodObject("p" + std::to_string(i))).ok());
  StatusOr<ListPageResult> page = api.ListPage(kPods, "ns", "", 2, "");
  ASSERT_TRUE(page.ok());
  ASSERT_FALSE(page->continue_token.empty());
  EXPECT_EQ(api.ListPage(kPods, "ns", "", 2, "garbage").status().code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("late")).ok());
  api.CompactHistory();
  StatusOr<ListPageResult> expired = api.ListPage(kPods, "ns", "", 2, page->continue_token);
  EXPECT_TRUE(IsExpired(expired.status())) << expired.status();
}

TEST(MemoryKubeApi, BackgroundDeleteCollectsDependentsRecursively) {
  MemoryKubeApi api;
  json job = *api.Create(kJobs, "ns", SkrullJobObject("j"));
  json pod = *api.Create(kPods, "ns", OwnedBy(PodObject("p"), job));
  ASSERT_TRUE(api.Create(kConfigMaps, "ns", OwnedBy(ConfigMapObject("grandchild"), pod)).ok());
  ASSERT_TRUE(api.Create(kConfigMaps, "ns", ConfigMapObject("unrelated")).ok());
  json other = *api.Create(kJobs, "ns", SkrullJobObject("other"));
  ASSERT_TRUE(
      api.Create(kConfigMaps, "ns", OwnedBy(OwnedBy(ConfigMapObject("shared"), job), other, false))
          .ok());
  ASSERT_TRUE(api.Delete(kJobs, "ns", "j", Propagation::kBackground).ok());
  EXPECT_EQ(api.Get(kPods, "ns", "p").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(api.Get(kConfigMaps, "ns", "grandchild").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(api.Get(kConfigMaps, "ns", "unrelated").ok());
  StatusOr<json> shared = api.Get(kConfigMaps, "ns", "shared");
  ASSERT_TRUE(shared.ok()) << "another owner still exists";
  ASSERT_EQ(shared->at("metadata").at("ownerReferences").size(), 1u);
  EXPECT_EQ(shared->at("metadata").at("ownerReferences")[0]["name"], "other");
}

TEST(MemoryKubeApi, ForegroundDeleteBehavesAsBackground) {
  MemoryKubeApi api;
  json job = *api.Create(kJobs, "ns", SkrullJobObject("j"));
  ASSERT_TRUE(api.Create(kPods, "ns", OwnedBy(PodObject("p"), job)).ok());
  ASSERT_TRUE(api.Delete(kJobs, "ns", "j", Propagation::kForeground).ok());
  EXPECT_EQ(api.Get(kPods, "ns", "p").status().code(), StatusCode::kNotFound);
}

TEST(MemoryKubeApi, OrphanDeleteStripsOwnerReferences) {
  MemoryKubeApi api;
  json job = *api.Create(kJobs, "ns", SkrullJobObject("j"));
  ASSERT_TRUE(api.Create(kPods, "ns", OwnedBy(PodObject("p"), job)).ok());
  ASSERT_TRUE(api.Delete(kJobs, "ns", "j", Propagation::kOrphan).ok());
  StatusOr<json> pod = api.Get(kPods, "ns", "p");
  ASSERT_TRUE(pod.ok());
  EXPECT_FALSE(pod->at("metadata").contains("ownerReferences"));
}

TEST(MemoryKubeApi, GarbageCollectionStaysInTheNamespace) {
  MemoryKubeApi api;
  json job = *api.Create(kJobs, "a", SkrullJobObject("j"));
  ASSERT_TRUE(api.Create(kPods, "b", OwnedBy(PodObject("p"), job)).ok());
  ASSERT_TRUE(api.Delete(kJobs, "a", "j", Propagation::kBackground).ok());
  EXPECT_TRUE(api.Get(kPods, "b", "p").ok()) << "cross-namespace owners are not followed";
}

TEST(MemoryKubeApi, FinalizersHoldDeletionUntilRemoved) {
  MemoryKubeApi api;
  json job = SkrullJobObject("j");
  job["metadata"]["finalizers"] = {"skrull.io/cleanup"};
  job = *api.Create(kJobs, "ns", job);
  ASSERT_TRUE(api.Create(kPods, "ns", OwnedBy(PodObject("p"), job)).ok());
  ASSERT_TRUE(api.Delete(kJobs, "ns", "j", Propagation::kBackground).ok());
  StatusOr<json> deleting = api.Get(kJobs, "ns", "j");
  ASSERT_TRUE(deleting.ok());
  EXPECT_FALSE(deleting->at("metadata").value("deletionTimestamp", "").empty());
  EXPECT_TRUE(api.Get(kPods, "ns", "p").ok()) << "dependents wait for the owner to go";
  ASSERT_TRUE(api.Patch(kJobs, "ns", "j", PatchType::kMerge,
                        {{"metadata", {{"finalizers", nullptr}}}}, false)
                  .ok());
  EXPECT_EQ(api.Get(kJobs, "ns", "j").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(api.Get(kPods, "ns", "p").status().code(), StatusCode::kNotFound);
}

TEST(MemoryKubeApi, FailNextInjectsErrorsForTheNamedVerb) {
  MemoryKubeApi api;
  ASSERT_TRUE(api.Create(kPods, "ns", PodObject("p")).ok());
  api.FailNext(Verb::kGet, 2, 500);
  api.FailNext(Verb::kReplace, 1, 409, "pods");
  EXPECT_EQ(api.Get(kPods, "ns", "p").status().code(), StatusCode::kUnavailable);
  StatusOr<json> second = api.Get(kPods, "ns", "p");
  EXPECT_NE(second.status().message().find("HTTP 500 InternalError: injected"), std::string::npos)
      << second.status();
  EXPECT_TRUE(api.Get(kPods, "ns", "p").ok()) << "only the next two";
  EXPECT_TRUE(api.List(kPods, "ns", "").ok()) << "other verbs are untouched";
  EXPECT_TRUE(IsConflict(api.Replace(kPods, "ns", "p", PodObject("p"), false).status()));
  EXPECT_TRUE(api.Replace(kPods, "ns", "p", PodObject("p"), false).ok());
}

}  // namespace
}  // namespace skrull::kube
