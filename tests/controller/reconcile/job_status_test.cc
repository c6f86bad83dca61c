#include "controller/reconcile/job_status.h"

#include <gtest/gtest.h>

#include "tests/controller/reconcile/job_fixtures.h"

namespace skrull::controller {
namespace {

using testing::T;

JobStatus FullStatus() {
  JobStatus s;
  s.phase = kPhaseRestarting;
  s.reason = kReasonPodFailed;
  s.message = "pod p failed: exit code 1 (Error)";
  s.observed_generation = 3;
  s.restarts = 1;
  s.start_time = T("2026-11-23T10:00:00Z");
  s.bucket_size_tokens = 13312;
  s.nodes = NodeCounts{2, 1, 0, 1, 0};
  s.conditions = {{kConditionCreated, true, kReasonPodsCreated, "pods of the job exist",
                   T("2026-11-23T09:59:00Z")},
                  {kPhaseRestarting, true, kReasonPodFailed, "m", T("2026-11-23T10:01:00Z")}};
  s.tuning = {{"nextBucketSizeTokens", 10240}};
  s.progress = {{"step", 7}};
  return s;
}

TEST(JobStatus, JsonRoundTripsEveryField) {
  const JobStatus s = FullStatus();
  const json j = JobStatusToJson(s);
  EXPECT_EQ(j["phase"], "Restarting");
  EXPECT_EQ(j["startTime"], "2026-11-23T10:00:00Z");
  EXPECT_EQ(j["conditions"][1]["status"], "True");
  EXPECT_EQ(j["nodes"]["failed"], 1);
  EXPECT_EQ(JobStatusFromJson(j), s);
  EXPECT_EQ(JobStatusToJson(JobStatusFromJson(j)), j);
}

TEST(JobStatus, UnsetFieldsAreLeftOutOfTheJson) {
  const json j = JobStatusToJson(JobStatus{});
  EXPECT_EQ(j, json::parse(R"({"observedGeneration": 0, "conditions": []})"));
}

TEST(JobStatus, FieldsOfTheWrongTypeReadAsUnset) {
  const JobStatus s =
      JobStatusFromJson(json::parse(R"({"phase": 7, "restarts": "two", "startTime": "yesterday",
                      "nodes": [], "conditions": [{"status": "True"}], "tuning": "x"})"));
  EXPECT_EQ(s, JobStatus{});
}

TEST(JobStatus, MergePatchNullsWhatTheNewStatusDropped) {
  const JobStatus old = FullStatus();
  JobStatus now = old;
  now.phase = kPhaseSuspended;
  now.start_time.reset();
  now.tuning = {{"nextBucketSizeTokens", 10240}, {"attempt", 1}};
  const json patch = JobStatusMergePatch(JobStatusToJson(old), now);
  EXPECT_EQ(patch, json::parse(R"({"phase": "Suspended", "startTime": null,
                                   "tuning": {"attempt": 1}})"))
      << patch.dump();
  json applied = JobStatusToJson(old);
  applied.merge_patch(patch);
  EXPECT_EQ(applied, JobStatusToJson(now));
}

}  // namespace
}  // namespace skrull::controller
