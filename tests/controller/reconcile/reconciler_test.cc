#include "controller/reconcile/reconciler.h"

#include <gtest/gtest.h>

#include "controller/kube/memory_kube_api.h"
#include "tests/controller/reconcile/job_fixtures.h"

namespace skrull::controller {
namespace {

using kube::MemoryKubeApi;
using testing::GpuJob;

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    ReconcilerOptions o;
    o.now = [this] { return now_; };
    reconciler_ = std::make_unique<Reconciler>(&api_, o);
    json job = GpuJob();
    job["metadata"].erase("uid");
    job["metadata"].erase("resourceVersion");
    job["metadata"].erase("generation");
    job["metadata"].erase("creationTimestamp");
    EXPECT_TRUE(api_.Create(kube::SkrullJobsResource(), "research", job).ok());
  }

  ReconcileResult Reconcile() {
    StatusOr<ReconcileResult> r = reconciler_->ReconcileJob("research", "long-sft");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : ReconcileResult{};
  }
  json Job() { return *api_.Get(kube::SkrullJobsResource(), "research", "long-sft"); }
  std::vector<std::string> PodNames() {
    std::vector<std::string> names;
    const kube::ListResult pods = api_.List(kube::PodsResource(), "research", "").value();
    for (const json& p : pods.items) {
      names.push_back(p["metadata"]["name"]);
    }
    return names;
  }
  // The kubelet: sets a pod's phase (and a failure) through /status.
  void SetPod(const std::string& name, const std::string& phase, int exit_code = 0) {
    json status = {{"phase", phase}};
    if (exit_code != 0) {
      status["containerStatuses"] = json::array(
          {{{"name", "trainer"},
            {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", "Error"}}}}}}});
    }
    ASSERT_TRUE(api_.Patch(kube::PodsResource(), "research", name, kube::PatchType::kMerge,
                           {{"status", status}}, true)
                    .ok());
  }
  std::vector<std::string> EventReasons() {
    std::vector<std::string> reasons;
    const kube::ListResult events = api_.List(kube::EventsResource(), "research", "").value();
    for (const json& e : events.items) {
      reasons.push_back(e["reason"]);
    }
    return reasons;
  }

  MemoryKubeApi api_;
  Clock::time_point now_ = Clock::now();
  std::unique_ptr<Reconciler> reconciler_;
};

TEST_F(ReconcilerTest, RunsAJobThroughAFailureAndARestartToSuccess) {
  ReconcileResult r = Reconcile();
  EXPECT_EQ(r.phase, "Pending");
  EXPECT_EQ(r.created, 4);  // ConfigMap, Service, 2 pods
  EXPECT_TRUE(r.status_written);
  EXPECT_EQ(PodNames(), (std::vector<std::string>{"long-sft-node-0-0", "long-sft-node-1-0"}));
  json pod = *api_.Get(kube::PodsResource(), "research", "long-sft-node-0-0");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], Job()["metadata"]["uid"]);
  EXPECT_EQ(Job()["status"]["phase"], "Pending");

  // Idempotent: nothing changed, nothing is written.
  r = Reconcile();
  EXPECT_EQ(r.created, 0);
  EXPECT_EQ(r.deleted, 0);
  EXPECT_FALSE(r.status_written);

  SetPod("long-sft-node-0-0", "Running");
  SetPod("long-sft-node-1-0", "Running");
  EXPECT_EQ(Reconcile().phase, "Running");

  SetPod("long-sft-node-1-0", "Failed", 1);
  r = Reconcile();
  EXPECT_EQ(r.phase, "Restarting");
  EXPECT_EQ(r.deleted, 1);
  EXPECT_EQ(PodNames(), (std::vector<std::string>{"long-sft-node-1-0"}));  // kept for logs
  EXPECT_EQ(Job()["status"]["restarts"], 1);

  r = Reconcile();  // the old attempt is gone: the next one starts
  EXPECT_EQ(r.phase, "Pending");
  EXPECT_EQ(r.created, 2);
  const std::string yaml =
      (*api_.Get(kube::ConfigMapsResource(), "research", "long-sft-spec"))["data"]["job.yaml"];
  EXPECT_NE(yaml.find("resumeFrom: latest"), std::string::npos);

  SetPod("long-sft-node-0-1", "Succeeded");
  SetPod("long-sft-node-1-1", "Succeeded");
  r = Reconcile();
  EXPECT_EQ(r.phase, "Succeeded");
  EXPECT_FALSE(Job()["status"]["completionTime"].is_null());
  const std::vector<std::string> reasons = EventReasons();
  for (const char* want : {"Starting", "AllNodesRunning", "PodFailed", "Completed"}) {
    EXPECT_NE(std::find(reasons.begin(), reasons.end(), want), reasons.end()) << want;
  }
}

TEST(ReconcilerTuning, AnOomEndedAttemptIsTunedAndTheNextOneRunsWithTheVerdict) {
  MemoryKubeApi api;
  std::vector<AttemptEnd> ends;
  ReconcilerOptions o;
  o.tune = [&](const api::JobSpec& spec, const json& job, const AttemptEnd& end) -> StatusOr<json> {
    ends.push_back(end);
    EXPECT_TRUE(spec.tuning.enabled);
    EXPECT_EQ(job["metadata"]["name"], "long-sft");
    return json{{"nextBucketSizeTokens", 10240}, {"reason", "rank 1 died of memory at 13312"}};
  };
  Reconciler reconciler(&api, o);
  json job = GpuJob();
  job["metadata"] = {{"name", "long-sft"}, {"namespace", "research"}};
  job["spec"]["tuning"] = {{"enabled", true}};
  ASSERT_TRUE(api.Create(kube::SkrullJobsResource(), "research", job).ok());
  ASSERT_TRUE(reconciler.ReconcileJob("research", "long-sft").ok());
  json status = {
      {"phase", "Failed"},
      {"containerStatuses",
       json::array({{{"name", "trainer"},
                     {"state", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}}})}};
  ASSERT_TRUE(api.Patch(kube::PodsResource(), "research", "long-sft-node-1-0",
                        kube::PatchType::kMerge, {{"status", status}}, true)
                  .ok());
  ASSERT_TRUE(reconciler.ReconcileJob("research", "long-sft").ok());  // Restarting + tuned
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].died_of_memory);
  EXPECT_EQ(ends[0].bucket_size_tokens, 13312);
  EXPECT_EQ(ends[0].attempt, 0);
  json got = *api.Get(kube::SkrullJobsResource(), "research", "long-sft");
  EXPECT_EQ(got["status"]["tuning"]["nextBucketSizeTokens"], 10240);
  EXPECT_EQ(got["status"]["tuning"]["attempt"], 0);

  ASSERT_TRUE(reconciler.ReconcileJob("research", "long-sft").ok());  // attempt 1 starts
  const std::string yaml =
      (*api.Get(kube::ConfigMapsResource(), "research", "long-sft-spec"))["data"]["job.yaml"];
  EXPECT_NE(yaml.find("bucketSize: 10240"), std::string::npos) << yaml;
  got = *api.Get(kube::SkrullJobsResource(), "research", "long-sft");
  EXPECT_EQ(got["status"]["bucketSizeTokens"], 10240);
}

TEST(ReconcilerTuning, ATunerErrorIsReportedAndTheJobGoesOn) {
  MemoryKubeApi api;
  ReconcilerOptions o;
  o.tune = [](const api::JobSpec&, const json&, const AttemptEnd&) -> StatusOr<json> {
    return UnavailableError("prometheus http://prom:9090: connection refused");
  };
  Reconciler reconciler(&api, o);
  json job = GpuJob();
  job["metadata"] = {{"name", "long-sft"}, {"namespace", "research"}};
  job["spec"]["tuning"] = {{"enabled", true}};
  ASSERT_TRUE(api.Create(kube::SkrullJobsResource(), "research", job).ok());
  ASSERT_TRUE(reconciler.ReconcileJob("research", "long-sft").ok());
  for (const char* pod : {"long-sft-node-0-0", "long-sft-node-1-0"}) {
    ASSERT_TRUE(api.Patch(kube::PodsResource(), "research", pod, kube::PatchType::kMerge,
                          {{"status", {{"phase", "Succeeded"}}}}, true)
                    .ok());
  }
  StatusOr<ReconcileResult> r = reconciler.ReconcileJob("research", "long-sft");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->phase, "Succeeded");
  json got = *api.Get(kube::SkrullJobsResource(), "research", "long-sft");
  EXPECT_NE(std::string(got["status"]["tuning"]["error"]).find("connection refused"),
            std::string::npos);
}

// A merge patch of the whole new status never removed a field: a suspended
// job kept the startTime of its last run. The patch now nulls it.
TEST_F(ReconcilerTest, FieldsTheNewStatusDropsAreRemovedFromTheObject) {
  Reconcile();
  for (const std::string& pod : PodNames()) SetPod(pod, "Running");
  Reconcile();
  ASSERT_TRUE(Job()["status"].contains("startTime"));
  json job = Job();
  job["spec"]["runPolicy"]["suspend"] = true;
  ASSERT_TRUE(api_.Replace(kube::SkrullJobsResource(), "research", "long-sft", job, false).ok());
  Reconcile();
  EXPECT_EQ(Job()["status"]["phase"], kPhaseSuspended);
  EXPECT_FALSE(Job()["status"].contains("startTime")) << Job()["status"].dump(2);
}

TEST_F(ReconcilerTest, IgnoresPodsOwnedByAnotherJobOfTheSameName) {
  json stranger = testing::PodOf(Job(), 0, 0, "Running");
  stranger["metadata"]["ownerReferences"][0]["uid"] = "some-older-uid";
  stranger["metadata"].erase("creationTimestamp");
  stranger.erase("status");
  ASSERT_TRUE(api_.Create(kube::PodsResource(), "research", stranger).ok());
  ReconcileResult r = Reconcile();
  // Its own pod 0 cannot be created while the stranger holds the name; the
  // stranger is never deleted or counted.
  EXPECT_EQ(r.deleted, 0);
  EXPECT_EQ(Job()["status"]["nodes"]["running"], 0);
}

TEST_F(ReconcilerTest, AnApiErrorIsReturnedWithTheJobsName) {
  api_.FailNext(kube::Verb::kList, 1, 500, "pods");
  StatusOr<ReconcileResult> r = reconciler_->ReconcileJob("research", "long-sft");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("skrulljob research/long-sft"), std::string::npos)
      << r.status();
  EXPECT_TRUE(reconciler_->ReconcileJob("research", "long-sft").ok());  // and recovers
}

TEST_F(ReconcilerTest, ADeletedJobIsNotFoundAndNothingHappens) {
  ASSERT_TRUE(api_.Delete(kube::SkrullJobsResource(), "research", "long-sft",
                          kube::Propagation::kBackground)
                  .ok());
  ReconcileResult r = Reconcile();
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(PodNames().empty());
}

}  // namespace
}  // namespace skrull::controller
