#include "controller/reconcile/desired.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "controller/reconcile/names.h"
#include "tests/controller/reconcile/job_fixtures.h"

namespace skrull::controller {
namespace {

using testing::GpuJob;

api::JobSpec SpecOf(const json& job) {
  json doc = {{"apiVersion", job["apiVersion"]},
              {"kind", job["kind"]},
              {"metadata",
               {{"name", job["metadata"]["name"]}, {"namespace", job["metadata"]["namespace"]}}},
              {"spec", job["spec"]}};
  StatusOr<api::JobSpec> spec = api::LoadJobSpec(doc.dump(), "<test>");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

std::string EnvOf(const json& pod, const std::string& name) {
  for (const json& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e["value"];
  }
  return "<unset>";
}

TEST(BuildDesired, OnePodPerNodeWiredForTheLaunchersRendezvous) {
  JobContext ctx;
  ctx.uid = "uid-1";
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(GpuJob()), ctx);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->pods.size(), 2u);
  for (int node = 0; node < 2; ++node) {
    const json& pod = d->pods[node];
    EXPECT_EQ(pod["metadata"]["name"], "long-sft-node-" + std::to_string(node) + "-0");
    EXPECT_EQ(pod["metadata"]["labels"][kLabelJobName], "long-sft");
    EXPECT_EQ(pod["metadata"]["labels"][kLabelNodeRank], std::to_string(node));
    EXPECT_EQ(pod["metadata"]["labels"][kLabelAttempt], "0");
    EXPECT_EQ(pod["metadata"]["labels"][kLabelComponent], "trainer");
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["controller"], true);
    EXPECT_EQ(pod["spec"]["hostname"], "long-sft-node-" + std::to_string(node));
    EXPECT_EQ(pod["spec"]["subdomain"], "long-sft");
    EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
    EXPECT_EQ(EnvOf(pod, "SKRULL_NNODES"), "2");
    EXPECT_EQ(EnvOf(pod, "SKRULL_NODE_RANK"), std::to_string(node));
    EXPECT_EQ(EnvOf(pod, "SKRULL_MASTER_ADDR"), "long-sft-node-0.long-sft.research.svc");
    EXPECT_EQ(EnvOf(pod, "SKRULL_MASTER_PORT"), "29500");
    const json& c = pod["spec"]["containers"][0];
    EXPECT_EQ(c["args"], json::array({"--job", "/etc/skrull/job.yaml"}));
    EXPECT_EQ(c["image"], std::string("ghcr.io/skrull/trainer:") + api::DefaultImageTag());
    // 4 ranks per node, each serving /metrics on 9400 + local rank.
    ASSERT_GE(c["ports"].size(), 4u);
    for (int l = 0; l < 4; ++l) {
      EXPECT_EQ(c["ports"][l]["name"], "metrics-" + std::to_string(l));
      EXPECT_EQ(c["ports"][l]["containerPort"], 9400 + l);
    }
    EXPECT_EQ(c["ports"].size(), node == 0 ? 5u : 4u);  // node 0 serves the rendezvous
    EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "4");
    EXPECT_EQ(c["resources"]["requests"]["memory"], "512Gi");
    EXPECT_EQ(pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"], "sft-data");
    EXPECT_EQ(c["volumeMounts"][1]["mountPath"], "/data");  // no /dev/shm by default
  }
  EXPECT_EQ(d->service["spec"]["clusterIP"], "None");
  EXPECT_EQ(d->service["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(d->service["spec"]["selector"][kLabelJobName], "long-sft");
}

TEST(BuildDesired, TheConfigMapHoldsTheSpecTheTrainerLoadsBack) {
  const api::JobSpec spec = SpecOf(GpuJob());
  JobContext ctx;
  StatusOr<DesiredObjects> d = BuildDesired(spec, ctx);
  ASSERT_TRUE(d.ok());
  const std::string yaml = d->config_map["data"]["job.yaml"];
  EXPECT_EQ(yaml, d->job_yaml);
  StatusOr<api::JobSpec> back = api::LoadJobSpec(yaml, "job.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  api::JobSpec expected = spec;
  expected.metrics.address = api::kPodMetricsAddress;  // pods serve /metrics on all addresses
  EXPECT_EQ(*back, expected);
}

TEST(BuildDesired, PodsServeMetricsOnAllAddressesUnlessTheJobNamesOne) {
  api::JobSpec spec = SpecOf(GpuJob());
  ASSERT_TRUE(spec.metrics.address.empty());
  StatusOr<DesiredObjects> d = BuildDesired(spec, JobContext());
  ASSERT_TRUE(d.ok());
  StatusOr<api::JobSpec> back = api::LoadJobSpec(d->job_yaml, "job.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metrics.address, "0.0.0.0");
  spec.metrics.address = "10.0.0.7";
  d = BuildDesired(spec, JobContext());
  ASSERT_TRUE(d.ok());
  back = api::LoadJobSpec(d->job_yaml, "job.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metrics.address, "10.0.0.7");
}

TEST(BuildDesired, LaterAttemptsResumeAndUseTheTunedBucketSize) {
  JobContext ctx;
  ctx.attempt = 2;
  ctx.bucket_size_override_tokens = 12288;
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(GpuJob()), ctx);
  ASSERT_TRUE(d.ok());
  StatusOr<api::JobSpec> back = api::LoadJobSpec(d->job_yaml, "job.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->training.resume_from, "latest");
  EXPECT_EQ(back->scheduler.bucket_size_tokens, 12288);
  EXPECT_EQ(d->pods[1]["metadata"]["name"], "long-sft-node-1-2");
  EXPECT_EQ(EnvOf(d->pods[1], "SKRULL_RUN_ID"), "long-sft-2");
}

TEST(BuildDesired, TheControllersTrainerImageReplacesOnlyTheDefault) {
  JobContext ctx;
  ctx.default_trainer_image = "registry.local/skrull/trainer:0.1.0-cu128";
  json job = GpuJob();
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(job), ctx);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->pods[0]["spec"]["containers"][0]["image"], ctx.default_trainer_image);
  job["spec"]["image"] = {{"repository", "registry.local/mine"}, {"tag", "v2"}};
  d = BuildDesired(SpecOf(job), ctx);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->pods[0]["spec"]["containers"][0]["image"], "registry.local/mine:v2");
}

TEST(BuildDesired, OneNodeRendezvousesOnLoopbackAndCpuJobsAskForNoGpu) {
  json job = GpuJob();
  job["spec"]["parallelism"] = {
      {"nodes", 1}, {"procsPerNode", 2}, {"dataParallel", 1}, {"contextParallel", 2}};
  job["spec"]["resources"] = {{"gpusPerProc", 0}};
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(job), JobContext());
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->pods.size(), 1u);
  EXPECT_EQ(EnvOf(d->pods[0], "SKRULL_MASTER_ADDR"), "<unset>");
  EXPECT_EQ(EnvOf(d->pods[0], "NCCL_DEBUG"), "<unset>");
  EXPECT_FALSE(d->pods[0]["spec"]["containers"][0]["resources"].contains("limits"));
}

TEST(BuildDesired, TrainerPodsRunRestrictedByDefault) {
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(GpuJob()), JobContext{});
  ASSERT_TRUE(d.ok()) << d.status();
  for (const json& pod : d->pods) {
    EXPECT_EQ(
        pod["spec"]["securityContext"],
        json::parse(R"({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})"));
    const json& c = pod["spec"]["containers"][0];
    EXPECT_EQ(c["securityContext"], json::parse(R"({"allowPrivilegeEscalation": false,
                                                     "runAsNonRoot": true,
                                                     "capabilities": {"drop": ["ALL"]}})"));
    for (const json& v : pod["spec"]["volumes"]) {
      EXPECT_FALSE(v.contains("emptyDir")) << "no memory-backed /dev/shm unless asked: " << v;
    }
    for (const json& m : c["volumeMounts"]) EXPECT_NE(m["mountPath"], "/dev/shm");
  }
}

TEST(BuildDesired, NcclsIpcLockAndSharedMemoryAreOptIn) {
  JobContext ctx;
  ctx.pod_security.ipc_lock = true;
  ctx.pod_security.shared_memory = true;
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(GpuJob()), ctx);
  ASSERT_TRUE(d.ok()) << d.status();
  const json& pod = d->pods[0];
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["securityContext"]["capabilities"],
            json::parse(R"({"drop": ["ALL"], "add": ["IPC_LOCK"]})"));
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(pod["spec"]["securityContext"]["runAsNonRoot"], true);
  json shm_volume, shm_mount;
  for (const json& v : pod["spec"]["volumes"]) {
    if (v["name"] == "dshm") shm_volume = v;
  }
  for (const json& m : c["volumeMounts"]) {
    if (m["mountPath"] == "/dev/shm") shm_mount = m;
  }
  EXPECT_EQ(shm_volume["emptyDir"]["medium"], "Memory");
  EXPECT_EQ(shm_mount["name"], "dshm");
}

TEST(BuildDesired, EveryObjectCarriesTheJobsLabelsAndAnnotations) {
  api::JobSpec spec = SpecOf(GpuJob());
  spec.labels = {{"team", "ml"}, {"kueue.x-k8s.io/queue-name", "gpu"}, {kLabelJobName, "spoof"}};
  spec.annotations = {{"cost-center", "42"},
                      {"kubectl.kubernetes.io/last-applied-configuration", "{...}"}};
  JobContext ctx;
  StatusOr<DesiredObjects> d = BuildDesired(spec, ctx);
  ASSERT_TRUE(d.ok()) << d.status();
  std::vector<json> objects = {d->config_map, d->service};
  objects.insert(objects.end(), d->pods.begin(), d->pods.end());
  for (const json& o : objects) {
    SCOPED_TRACE(o["metadata"]["name"].get<std::string>());
    const json& meta = o["metadata"];
    EXPECT_EQ(meta["labels"]["team"], "ml");
    EXPECT_EQ(meta["labels"]["kueue.x-k8s.io/queue-name"], "gpu");
    // The controller's own labels win: selectors keep working.
    EXPECT_EQ(meta["labels"][kLabelJobName], "long-sft");
    EXPECT_EQ(meta["annotations"], json({{"cost-center", "42"}}));
  }
}

TEST(BuildDesired, TheJobsPodTemplateReachesEveryPod) {
  json job = GpuJob();
  job["spec"]["pod"] = json::parse(R"({
    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
      {"topologyKey": "kubernetes.io/hostname",
       "labelSelector": {"matchLabels": {"skrull.io/job-name": "long-sft"}}}]}},
    "priorityClassName": "training-high",
    "schedulerName": "volcano",
    "env": [{"name": "NCCL_IB_HCA", "value": "mlx5"}, {"name": "NCCL_DEBUG", "value": "INFO"}],
    "volumes": [{"name": "datasets", "persistentVolumeClaim": {"claimName": "datasets"}}],
    "volumeMounts": [{"name": "datasets", "mountPath": "/datasets", "readOnly": true}],
    "imagePullSecrets": [{"name": "regcred"}],
    "resources": {"requests": {"rdma/ib": "1"}, "limits": {"rdma/ib": "1"}},
    "hostNetwork": true
  })");
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(job), JobContext{});
  ASSERT_TRUE(d.ok()) << d.status();
  for (const json& pod : d->pods) {
    const json& spec = pod["spec"];
    const json& c = spec["containers"][0];
    EXPECT_EQ(spec["nodeSelector"]["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
    EXPECT_EQ(spec["tolerations"][0]["key"], "nvidia.com/gpu");
    EXPECT_EQ(spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                  [0]["topologyKey"],
              "kubernetes.io/hostname");
    EXPECT_EQ(spec["priorityClassName"], "training-high");
    EXPECT_EQ(spec["schedulerName"], "volcano");
    EXPECT_EQ(spec["imagePullSecrets"], json::parse(R"([{"name": "regcred"}])"));
    EXPECT_EQ(spec["hostNetwork"], true);
    EXPECT_EQ(spec["dnsPolicy"], "ClusterFirstWithHostNet");
    EXPECT_EQ(spec["volumes"].back()["name"], "datasets");
    EXPECT_EQ(spec["volumes"][0]["name"], "job-spec");  // the controller's stay first
    EXPECT_EQ(c["volumeMounts"].back()["mountPath"], "/datasets");
    EXPECT_EQ(c["resources"]["requests"]["rdma/ib"], "1");
    EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "4");
    // The user's env vars come after the controller's: NCCL_DEBUG=INFO wins.
    EXPECT_EQ(EnvOf(pod, "NCCL_IB_HCA"), "mlx5");
    EXPECT_EQ(c["env"].back(), json({{"name", "NCCL_DEBUG"}, {"value", "INFO"}}));
    EXPECT_EQ(EnvOf(pod, "SKRULL_NNODES"), "2");
  }
}

TEST(BuildDesired, ChildrenWithoutPodsAndOnePodAtATimeMatchTheWhole) {
  const api::JobSpec spec = SpecOf(GpuJob());
  JobContext ctx;
  ctx.uid = "uid-1";
  StatusOr<DesiredObjects> whole = BuildDesired(spec, ctx);
  StatusOr<DesiredObjects> children = BuildDesiredChildren(spec, ctx);
  ASSERT_TRUE(whole.ok() && children.ok());
  EXPECT_TRUE(children->pods.empty());
  EXPECT_EQ(children->config_map, whole->config_map);
  EXPECT_EQ(children->service, whole->service);
  for (int node = 0; node < 2; ++node) EXPECT_EQ(BuildPod(spec, ctx, node), whole->pods[node]);
}

TEST(BuildDesired, ANameTooLongForPodHostnamesIsAnError) {
  json job = GpuJob(std::string(60, 'a'));
  StatusOr<DesiredObjects> d = BuildDesired(SpecOf(job), JobContext());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("metadata.name: at most 56 characters for a job of 2 "
                                      "node(s)"),
            std::string::npos)
      << d.status();
  EXPECT_EQ(MaxJobNameLength(10), 56);
  EXPECT_EQ(MaxJobNameLength(11), 55);
}

}  // namespace
}  // namespace skrull::controller
