// Builders for SkrullJob objects and the pods the "kubelet" reports, shared
// by the controller's reconcile tests.
#ifndef SKRULL_TESTS_CONTROLLER_RECONCILE_JOB_FIXTURES_H_
#define SKRULL_TESTS_CONTROLLER_RECONCILE_JOB_FIXTURES_H_

#include <string>

#include <nlohmann/json.hpp>

#include "controller/reconcile/decide.h"
#include "controller/reconcile/names.h"

namespace skrull::controller::testing {

using json = nlohmann::json;

// A 2-node x 4-proc GPU job (dp 2 x cp 4) as the API server returns it.
inline json GpuJob(const std::string& name = "long-sft") {
  return json::parse(R"({
    "apiVersion": "skrull.io/v1alpha1",
    "kind": "SkrullJob",
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "research", "uid": "uid-1",
                 "generation": 1, "resourceVersion": "7",
                 "creationTimestamp": "2026-11-23T10:00:00Z",
                 "labels": {"team": "ml"},
                 "managedFields": [{"manager": "kubectl"}]},
    "spec": {
      "model": {"config": "/data/models/qwen2.5-7b/config.json"},
      "data": {"path": "/data/sft.jsonl", "format": "tokenized-jsonl"},
      "parallelism": {"nodes": 2, "procsPerNode": 4, "dataParallel": 2, "contextParallel": 4},
      "scheduler": {"bucketSize": "13K", "batchSize": 40},
      "training": {"steps": 1000, "precision": "bf16", "outputDir": "/data/runs/long-sft"},
      "resources": {"gpusPerProc": 1, "cpu": "32", "memory": "512Gi"},
      "storage": {"claimName": "sft-data"},
      "runPolicy": {"backoffLimit": 2, "startDeadlineSeconds": 300}
    }
  })");
}

inline Clock::time_point T(const std::string& rfc3339) { return *ParseTime(rfc3339); }

// A pod of `job` for `node` and `attempt` in `phase`, created at `created`.
inline json PodOf(const json& job, int node, int attempt, const std::string& phase,
                  const std::string& created = "2026-11-23T10:00:05Z") {
  const std::string name = job["metadata"]["name"];
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", PodName(name, node, attempt)},
            {"namespace", job["metadata"]["namespace"]},
            {"creationTimestamp", created},
            {"labels",
             {{kLabelJobName, name},
              {kLabelNodeRank, std::to_string(node)},
              {kLabelAttempt, std::to_string(attempt)}}},
            {"ownerReferences",
             json::array({{{"uid", job["metadata"]["uid"]}, {"controller", true}}})}}},
          {"status", {{"phase", phase}}}};
}

inline json Failed(json pod, int exit_code, const std::string& reason) {
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "trainer"},
                    {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", reason}}}}}}});
  return pod;
}

inline json Waiting(json pod, const std::string& reason, const std::string& message) {
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "trainer"},
                    {"state", {{"waiting", {{"reason", reason}, {"message", message}}}}}}});
  return pod;
}

}  // namespace skrull::controller::testing

#endif  // SKRULL_TESTS_CONTROLLER_RECONCILE_JOB_FIXTURES_H_
