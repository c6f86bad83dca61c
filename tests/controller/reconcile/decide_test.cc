#include "controller/reconcile/decide.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/controller/reconcile/job_fixtures.h"

namespace skrull::controller {
namespace {

using testing::Failed;
using testing::GpuJob;
using testing::PodOf;
using testing::T;
using testing::Waiting;

// A toy API server + kubelet: applies decisions the way the reconciler does.
struct World {
  json job = GpuJob();
  std::map<std::string, json> pods;
  std::optional<json> service, config_map;
  Clock::time_point now = T("2026-11-23T10:00:01Z");

  Decision Step() {
    JobObservation o;
    o.job = job;
    for (auto& [name, pod] : pods) o.pods.push_back(pod);
    o.service = service;
    o.config_map = config_map;
    o.now = now;
    Decision d = Decide(o);
    for (const json& obj : d.create) {
      if (obj["kind"] == "Pod") {
        json pod = obj;
        pod["metadata"]["creationTimestamp"] = FormatTime(now);
        pod["status"] = {{"phase", "Pending"}};
        pods[obj["metadata"]["name"]] = pod;
      } else if (obj["kind"] == "Service") {
        service = obj;
      } else {
        config_map = obj;
      }
    }
    if (d.update_config_map) config_map = *d.update_config_map;
    for (const std::string& name : d.delete_pods) {
      pods[name]["metadata"]["deletionTimestamp"] = FormatTime(now);
    }
    job["status"] = JobStatusToJson(d.status);
    return d;
  }
  void SetPhase(const std::string& name, const std::string& phase) {
    pods.at(name)["status"]["phase"] = phase;
  }
  void SetAll(const std::string& phase) {
    for (auto& [name, pod] : pods) pod["status"]["phase"] = phase;
  }
  // The kubelet finishes deleting what was marked.
  void ReapDeleted() {
    for (auto it = pods.begin(); it != pods.end();) {
      it = it->second["metadata"].contains("deletionTimestamp") ? pods.erase(it) : std::next(it);
    }
  }
  std::string Phase() const { return job["status"].value("phase", ""); }
  std::string Condition(const std::string& type) const {
    for (const json& c : job["status"]["conditions"]) {
      if (c["type"] == type) return c["status"];
    }
    return "<none>";
  }
};

TEST(Decide, ANewJobGetsItsConfigMapServiceAndOnePodPerNode) {
  World w;
  Decision d = w.Step();
  ASSERT_EQ(d.create.size(), 4u);
  EXPECT_EQ(d.create[0]["kind"], "ConfigMap");
  EXPECT_EQ(d.create[1]["kind"], "Service");
  EXPECT_EQ(d.create[2]["metadata"]["name"], "long-sft-node-0-0");
  EXPECT_EQ(d.create[3]["metadata"]["name"], "long-sft-node-1-0");
  EXPECT_EQ(w.Phase(), "Pending");
  EXPECT_EQ(w.Condition("Created"), "True");
  EXPECT_EQ(w.job["status"]["observedGeneration"], 1);
  EXPECT_EQ(w.job["status"]["bucketSizeTokens"], 13312);
  EXPECT_TRUE(d.status_changed);
  // Start deadline: decide again when the pods' 300 s are up.
  EXPECT_EQ(d.requeue_after.count(), 300);
}

TEST(Decide, ManyNodesStartInBoundedBatchesWithTheStatusWrittenAsItGoes) {
  World w;
  w.job["spec"]["parallelism"] = {
      {"nodes", 150}, {"procsPerNode", 1}, {"dataParallel", 150}, {"contextParallel", 1}};
  int passes = 0;
  int64_t missing_before = 150;
  while (true) {
    Decision d = w.Step();
    ++passes;
    int pods = 0;
    for (const json& o : d.create) pods += o["kind"] == "Pod" ? 1 : 0;
    EXPECT_LE(pods, kDefaultMaxPodCreatesPerPass);
    const int64_t missing = w.job["status"]["nodes"]["missing"];
    EXPECT_EQ(missing, missing_before - pods);
    EXPECT_TRUE(d.status_changed || pods == 0);
    missing_before = missing;
    if (missing == 0) break;
    EXPECT_EQ(d.requeue_after, kPodBatchRequeue);  // the next batch comes soon
    ASSERT_LT(passes, 10);
  }
  EXPECT_EQ(passes, 3);  // 64 + 64 + 22
  EXPECT_EQ(w.pods.size(), 150u);
  EXPECT_TRUE(w.pods.count("long-sft-node-149-0"));
}

TEST(Decide, TheLargestJobAPassBuildsOnlyOneBatchOfPods) {
  World w;
  w.job["spec"]["parallelism"] = {{"nodes", api::kMaxNodes},
                                  {"procsPerNode", 8},
                                  {"dataParallel", 8 * api::kMaxNodes},
                                  {"contextParallel", 1}};
  w.job["spec"]["scheduler"]["batchSize"] = 1;
  JobObservation o;
  o.job = w.job;
  o.now = w.now;
  o.max_pod_creates_per_pass = 16;
  Decision d = Decide(o);
  ASSERT_EQ(d.create.size(), 2u + 16u) << JobStatusToJson(d.status).dump();
  EXPECT_EQ(d.status.nodes->missing, api::kMaxNodes - 16);
}

TEST(Decide, AJobOverTheControllersWorldSizeFailsBeforeAnyPod) {
  World w;
  JobObservation o;
  o.job = w.job;  // 2 nodes x 4 procs = 8 ranks
  o.now = w.now;
  o.max_world_size = 4;
  Decision d = Decide(o);
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(d.status.phase, kPhaseFailed);
  EXPECT_EQ(d.status.reason, kReasonTooLarge);
  EXPECT_EQ(d.status.message,
            "spec.parallelism: nodes (2) x procsPerNode (4) = 8 ranks; this controller runs jobs "
            "of at most 4 (skrull-controller serve --max-world-size)");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, kEventWarning);
}

TEST(Decide, DecidingAgainOnAnUnchangedWorldChangesNothing) {
  World w;
  w.Step();
  w.Step();  // sees the pods it created
  w.now += std::chrono::seconds(5);
  Decision d = w.Step();
  EXPECT_TRUE(d.create.empty());
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_FALSE(d.update_config_map.has_value());
  EXPECT_FALSE(d.status_changed) << JobStatusToJson(d.status).dump(2);
  EXPECT_TRUE(d.events.empty());
}

TEST(Decide, AllNodesRunningIsRunningWithAStartTime) {
  World w;
  w.Step();
  w.SetAll("Running");
  w.now = T("2026-11-23T10:01:00Z");
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Running");
  EXPECT_EQ(w.Condition("Running"), "True");
  EXPECT_EQ(w.job["status"]["startTime"], "2026-11-23T10:01:00Z");
  EXPECT_EQ(w.job["status"]["nodes"]["running"], 2);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "AllNodesRunning");
}

TEST(Decide, AFailedRankRestartsTheWholeGroupFromTheCheckpoint) {
  World w;
  w.Step();
  w.SetAll("Running");
  w.Step();
  w.pods.at("long-sft-node-1-0") = Failed(w.pods.at("long-sft-node-1-0"), 1, "Error");
  w.SetPhase("long-sft-node-1-0", "Failed");
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Restarting");
  EXPECT_EQ(w.job["status"]["restarts"], 1);
  // The live rank is stopped; the failed pod stays for its logs.
  EXPECT_EQ(d.delete_pods, std::vector<std::string>{"long-sft-node-0-0"});
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].type, "Warning");
  EXPECT_NE(d.events[0].message.find("pod long-sft-node-1-0 failed: exit code 1 (Error)"),
            std::string::npos)
      << d.events[0].message;
  EXPECT_TRUE(d.create.empty());

  // Node 0's pod is still terminating: the next attempt waits (same DNS name).
  d = w.Step();
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(w.Phase(), "Restarting");

  w.ReapDeleted();
  d = w.Step();
  ASSERT_EQ(d.create.size(), 2u);
  EXPECT_EQ(d.create[0]["metadata"]["name"], "long-sft-node-0-1");
  EXPECT_EQ(d.create[1]["metadata"]["name"], "long-sft-node-1-1");
  // The ConfigMap the new pods mount resumes from the newest checkpoint.
  ASSERT_TRUE(w.config_map.has_value());
  EXPECT_NE(std::string((*w.config_map)["data"]["job.yaml"]).find("resumeFrom: latest"),
            std::string::npos);
  EXPECT_EQ(w.Phase(), "Pending");
  EXPECT_EQ(w.Condition("Restarting"), "False");
  EXPECT_TRUE(w.pods.count("long-sft-node-1-0"));  // the failed pod is kept
}

// The trainer exits 3 after a CUDA out-of-memory error
// (trainer/metrics/oom_record.h): the attempt died of memory, so the tuner
// steps BucketSize down, as after an OOMKill; exit 1 and exit 30 are not.
TEST(Decide, TheTrainersOutOfMemoryExitStatusEndsTheAttemptAsDiedOfMemory) {
  for (const auto& [code, oom] :
       std::vector<std::pair<int, bool>>{{3, true}, {1, false}, {30, false}}) {
    World w;
    w.Step();
    w.SetAll("Running");
    w.Step();
    w.pods.at("long-sft-node-1-0") = Failed(w.pods.at("long-sft-node-1-0"), code, "Error");
    w.SetPhase("long-sft-node-1-0", "Failed");
    Decision d = w.Step();
    ASSERT_TRUE(d.attempt_ended.has_value()) << code;
    EXPECT_EQ(d.attempt_ended->died_of_memory, oom) << code << ": " << d.attempt_ended->failure;
  }
}

TEST(Decide, FailingPastBackoffLimitFailsTheJob) {
  World w;
  w.job["status"] = {{"restarts", 2}, {"phase", "Running"}};
  w.pods["long-sft-node-0-2"] = PodOf(w.job, 0, 2, "Running");
  w.pods["long-sft-node-1-2"] = Failed(PodOf(w.job, 1, 2, "Failed"), 137, "OOMKilled");
  w.config_map = json::object();
  w.service = json::object();
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Failed");
  EXPECT_EQ(w.job["status"]["reason"], "BackoffLimitExceeded");
  EXPECT_NE(std::string(w.job["status"]["message"]).find("exit code 137 (OOMKilled)"),
            std::string::npos);
  EXPECT_EQ(w.job["status"]["completionTime"], "2026-11-23T10:00:01Z");
  EXPECT_EQ(d.delete_pods, std::vector<std::string>{"long-sft-node-0-2"});
  EXPECT_EQ(w.Condition("Failed"), "True");
  // Terminal: nothing more happens.
  d = w.Step();
  EXPECT_TRUE(d.create.empty() && d.delete_pods.empty() && !d.status_changed);
}

TEST(Decide, APodThatCannotStartFailsTheJobAtTheStartDeadline) {
  World w;
  w.Step();
  const std::string pod = "long-sft-node-1-0";
  w.pods.at(pod) = Waiting(w.pods.at(pod), "ImagePullBackOff", "Back-off pulling image");
  w.now += std::chrono::seconds(200);
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Pending");
  EXPECT_EQ(d.requeue_after.count(), 100);
  w.now += std::chrono::seconds(100);
  d = w.Step();
  EXPECT_EQ(w.Phase(), "Failed");
  EXPECT_EQ(w.job["status"]["reason"], "StartDeadlineExceeded");
  EXPECT_NE(std::string(w.job["status"]["message"])
                .find("pod long-sft-node-0-0 not running 300 s after it was created"),
            std::string::npos)
      << w.job["status"]["message"];
  EXPECT_EQ(w.job["status"]["restarts"].is_null(), true);  // no restart: it would not help
  EXPECT_EQ(d.delete_pods.size(), 2u);
}

TEST(Decide, StuckMessagesNameTheReason) {
  World w;
  w.Step();
  for (auto& [name, pod] : w.pods) pod = Waiting(pod, "ErrImagePull", "not found");
  w.now += std::chrono::seconds(301);
  w.Step();
  EXPECT_NE(std::string(w.job["status"]["message"]).find("ErrImagePull: not found"),
            std::string::npos);
}

TEST(Decide, SuccessAppliesCleanPodPolicyAndTheTtl) {
  World w;
  w.job["spec"]["runPolicy"]["cleanPodPolicy"] = "All";
  w.job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60;
  w.Step();
  w.SetAll("Succeeded");
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Succeeded");
  EXPECT_EQ(d.delete_pods.size(), 2u);
  EXPECT_EQ(d.requeue_after.count(), 60);
  EXPECT_FALSE(d.delete_job);
  w.now += std::chrono::seconds(60);
  d = w.Step();
  EXPECT_TRUE(d.delete_job);
}

TEST(Decide, CleanPodPolicyNoneKeepsFinishedPods) {
  World w;
  w.Step();
  w.SetAll("Succeeded");
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Succeeded");
  EXPECT_TRUE(d.delete_pods.empty());
  EXPECT_EQ(d.requeue_after.count(), 0);
}

TEST(Decide, SuspendStopsThePodsAndResumingStartsThem) {
  World w;
  w.Step();
  w.SetAll("Running");
  w.Step();
  w.job["spec"]["runPolicy"]["suspend"] = true;
  Decision d = w.Step();
  EXPECT_EQ(w.Phase(), "Suspended");
  EXPECT_EQ(d.delete_pods.size(), 2u);
  EXPECT_FALSE(w.job["status"].contains("startTime"));
  w.ReapDeleted();
  w.job["spec"]["runPolicy"]["suspend"] = false;
  d = w.Step();
  EXPECT_EQ(d.create.size(), 2u);
  EXPECT_EQ(w.Phase(), "Pending");
  EXPECT_EQ(w.Condition("Suspended"), "False");
}

TEST(Decide, AnInvalidSpecFailsWithTheFieldAndNoPods) {
  World w;
  w.job["spec"]["parallelism"]["dataParallel"] = 3;
  Decision d = w.Step();
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(w.Phase(), "Failed");
  EXPECT_EQ(w.job["status"]["reason"], "InvalidSpec");
  const std::string message = w.job["status"]["message"];
  EXPECT_NE(message.find("skrulljob research/long-sft"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.parallelism"), std::string::npos) << message;
}

TEST(Decide, PodsOfAnotherAttemptAreRemovedBeforeNewOnesStart) {
  World w;
  w.job["status"] = {{"restarts", 1}, {"phase", "Restarting"}};
  w.pods["long-sft-node-0-0"] = PodOf(w.job, 0, 0, "Running");
  w.config_map = json::object();
  w.service = json::object();
  Decision d = w.Step();
  EXPECT_EQ(d.delete_pods, std::vector<std::string>{"long-sft-node-0-0"});
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(w.Phase(), "Restarting");
}

TEST(Decide, ActiveDeadlineStopsARunningJob) {
  World w;
  w.job["spec"]["runPolicy"]["activeDeadlineSeconds"] = 3600;
  w.Step();
  w.SetAll("Running");
  Decision d = w.Step();
  EXPECT_EQ(d.requeue_after.count(), 3600);
  w.now += std::chrono::seconds(3600);
  d = w.Step();
  EXPECT_EQ(w.Phase(), "Failed");
  EXPECT_EQ(w.job["status"]["reason"], "DeadlineExceeded");
  EXPECT_EQ(d.delete_pods.size(), 2u);
}

TEST(Decide, TuningPutsTheRecommendedBucketSizeInTheNextAttempt) {
  World w;
  w.job["spec"]["tuning"] = {{"enabled", true}};
  w.job["status"] = {{"tuning", {{"nextBucketSizeTokens", 15360}}}};
  w.Step();
  ASSERT_TRUE(w.config_map.has_value());
  EXPECT_NE(std::string((*w.config_map)["data"]["job.yaml"]).find("bucketSize: 15360"),
            std::string::npos);
  EXPECT_EQ(w.job["status"]["bucketSizeTokens"], 15360);
  // Without tuning enabled the recommendation is only advice.
  World off;
  off.job["status"] = {{"tuning", {{"nextBucketSizeTokens", 15360}}}};
  off.Step();
  EXPECT_EQ(off.job["status"]["bucketSizeTokens"], 13312);
}

TEST(Decide, TimesRoundTripInKubernetesFormat) {
  const auto t = T("2026-11-23T10:00:01Z");
  EXPECT_EQ(FormatTime(t), "2026-11-23T10:00:01Z");
  EXPECT_EQ(ParseTime("2026-11-23T10:00:01.123456Z"), t);
  EXPECT_EQ(ParseTime("2026-11-23T10:00:01+00:00"), t);
  EXPECT_FALSE(ParseTime("yesterday").has_value());
  EXPECT_FALSE(ParseTime("2026-11-23T10:00:01+02:00").has_value());
}

}  // namespace
}  // namespace skrull::controller
