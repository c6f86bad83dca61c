#include "controller/operator/controller.h"

#include <gtest/gtest.h>

#include <thread>

#include "controller/kube/memory_kube_api.h"
#include "controller/reconcile/names.h"

namespace skrull::controller {
namespace {

using kube::json;

json CpuJob(const std::string& name) {
  return json::parse(R"({
    "apiVersion": "skrull.io/v1alpha1", "kind": "SkrullJob",
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "team"},
    "spec": {
      "model": {"config": "/data/tiny/config.json"},
      "data": {"path": "/data/train.jsonl"},
      "parallelism": {"nodes": 2, "procsPerNode": 1, "dataParallel": 2},
      "scheduler": {"bucketSize": 4096},
      "resources": {"gpusPerProc": 0}
    }})");
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Controller, WatchesJobsAndPodsAndDrivesAJobToSuccess) {
  kube::MemoryKubeApi api;
  ControllerOptions o;
  o.watch_namespace = "";  // every namespace
  o.watch_timeout = std::chrono::seconds(2);
  o.resync = std::chrono::seconds(1);
  Controller controller(&api, o);
  std::atomic<bool> stop{false};
  std::thread run([&] { controller.Run(stop); });

  ASSERT_TRUE(api.Create(kube::SkrullJobsResource(), "team", CpuJob("sft")).ok());
  auto pods = [&] { return api.List(kube::PodsResource(), "team", "").value().items; };
  ASSERT_TRUE(WaitFor([&] { return pods().size() == 2; }));

  // The kubelet runs both pods to completion; pod events drive the job.
  for (const char* phase : {"Running", "Succeeded"}) {
    for (const json& p : pods()) {
      ASSERT_TRUE(api.Patch(kube::PodsResource(), "team", p["metadata"]["name"],
                            kube::PatchType::kMerge, {{"status", {{"phase", phase}}}}, true)
                      .ok());
    }
  }
  auto phase = [&] {
    return api.Get(kube::SkrullJobsResource(), "team", "sft")
        .value()
        .value("status", json::object())
        .value("phase", "");
  };
  EXPECT_TRUE(WaitFor([&] { return phase() == "Succeeded"; })) << phase();

  // A broken watch is resumed and still sees new jobs.
  api.DropWatches();
  ASSERT_TRUE(api.Create(kube::SkrullJobsResource(), "team", CpuJob("second")).ok());
  EXPECT_TRUE(WaitFor([&] { return pods().size() == 4; }));

  const std::string metrics = controller.Metrics();
  EXPECT_NE(metrics.find("skrull_controller_reconcile_total{result=\"success\"}"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("skrull_controller_jobs{phase=\"Succeeded\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("skrull_controller_watch_restarts_total"), std::string::npos);
  stop = true;
  run.join();
}

TEST(Controller, AFailingReconcileIsRetriedWithBackoff) {
  kube::MemoryKubeApi api;
  Controller controller(&api, ControllerOptions());
  ASSERT_TRUE(api.Create(kube::SkrullJobsResource(), "team", CpuJob("sft")).ok());
  api.FailNext(kube::Verb::kList, 1, 503, "pods");
  controller.ProcessKey("team/sft");
  EXPECT_NE(controller.Metrics().find("skrull_controller_reconcile_total{result=\"error\"} 1"),
            std::string::npos);
  EXPECT_EQ(controller.queue().Get(std::chrono::milliseconds(1500)), "team/sft");
}

}  // namespace
}  // namespace skrull::controller
