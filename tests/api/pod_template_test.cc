// spec.pod: parsed into JSON text as written, validated against the names
// the controller keeps for itself, and carried through ToYaml unchanged.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/job_spec.h"
#include "tests/api/job_builder.h"

namespace skrull::api {
namespace {

using testing::JobYaml;
using testing::LoadErrors;

constexpr char kPod[] = R"({
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3},
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule,
                 tolerationSeconds: 30}],
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
    {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a, "1"]}]}]}}},
  priorityClassName: training-high,
  schedulerName: volcano,
  env: [{name: NCCL_IB_HCA, value: "mlx5"}, {name: NCCL_NET_GDR_LEVEL, value: "2"},
        {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}],
  volumes: [{name: datasets, persistentVolumeClaim: {claimName: datasets, readOnly: true}}],
  volumeMounts: [{name: datasets, mountPath: /datasets, readOnly: true}],
  imagePullSecrets: [{name: regcred}],
  resources: {requests: {rdma/ib: "1"}, limits: {rdma/ib: "1"}},
  hostNetwork: true
})";

// The minimal job with `pod` (flow YAML) as its spec.pod, as written: the
// JobYaml builder would re-emit it and drop the quotes under test.
std::string WithPod(const std::string& pod) {
  std::string indented;
  for (char c : pod) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
  return std::string(testing::kMinimalJob) + "  pod: " + indented + "\n";
}

JobSpec Load(const std::string& text) {
  StatusOr<JobSpec> spec = LoadJobSpec(text, "<test>");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

TEST(PodTemplate, KubernetesObjectsAreKeptAsWrittenInJson) {
  const JobSpec s = Load(WithPod(kPod));
  const PodTemplateSpec& p = s.pod;
  EXPECT_EQ(p.node_selector.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(p.tolerations, R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule",)"
                           R"("tolerationSeconds":30}])");
  // A quoted "1" stays a string; plain scalars keep their JSON type.
  EXPECT_NE(p.affinity.find(R"("values":["a","1"])"), std::string::npos) << p.affinity;
  EXPECT_EQ(p.env_names, (std::vector<std::string>{"NCCL_IB_HCA", "NCCL_NET_GDR_LEVEL", "POD_IP"}));
  EXPECT_NE(p.env.find(R"({"name":"NCCL_NET_GDR_LEVEL","value":"2"})"), std::string::npos);
  EXPECT_EQ(p.volume_names, std::vector<std::string>{"datasets"});
  EXPECT_EQ(p.volume_mount_names, std::vector<std::string>{"datasets"});
  EXPECT_EQ(p.image_pull_secrets, R"([{"name":"regcred"}])");
  EXPECT_EQ(p.requests.at("rdma/ib"), "1");
  EXPECT_TRUE(p.host_network);
  EXPECT_EQ(p.priority_class_name, "training-high");
  EXPECT_EQ(p.scheduler_name, "volcano");
}

TEST(PodTemplate, RoundTripsThroughToYaml) {
  const JobSpec s = Load(WithPod(kPod));
  const JobSpec again = Load(ToYaml(s));
  EXPECT_EQ(again, s) << ToYaml(s);
  EXPECT_EQ(again.pod.env, s.pod.env);
  EXPECT_EQ(again.pod.affinity, s.pod.affinity);
}

TEST(PodTemplate, AJobWithoutItWritesNoPodSection) {
  const JobSpec s = Load(JobYaml().Text());
  EXPECT_TRUE(s.pod.Empty());
  EXPECT_EQ(ToYaml(s).find("pod:"), std::string::npos);
}

TEST(PodTemplate, TheControllersNamesAndResourcesAreRefused) {
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.pod", R"({
    env: [{name: SKRULL_NODE_RANK, value: "3"}, {name: A, value: x}, {name: A, value: y}],
    volumes: [{name: job-spec, emptyDir: {}}, {name: scratch, emptyDir: {}}],
    volumeMounts: [{name: nowhere, mountPath: /x}, {name: scratch, mountPath: /scratch}],
    resources: {requests: {nvidia.com/gpu: "8", rdma/ib: lots}}})")
                           .Text()),
            (std::vector<std::string>{
                "spec.pod.env[0].name: SKRULL_* variables are set by the controller for the "
                "launcher (got 'SKRULL_NODE_RANK')",
                "spec.pod.env[2].name: duplicate variable 'A'",
                "spec.pod.volumes[0].name: job-spec, dshm and storage are the controller's "
                "volumes; choose another name (got 'job-spec')",
                "spec.pod.volumeMounts[0].name: names no volume of spec.pod.volumes (got "
                "'nowhere')",
                "spec.pod.resources.requests[nvidia.com/gpu]: set nvidia.com/gpu in "
                "spec.resources (cpu, memory, gpusPerProc), not here",
                "spec.pod.resources.requests[rdma/ib]: must be a Kubernetes quantity such as 8, "
                "0.5, 500m or 64Gi (binary suffixes Ki Mi Gi Ti Pi Ei, decimal k M G T P E) (got "
                "'lots')",
            }));
}

TEST(PodTemplate, ShapesAreChecked) {
  EXPECT_EQ(LoadErrors(JobYaml()
                           .Set("spec.pod", R"({tolerations: {key: a}, env: [{value: x}, oops],
                                                 affinity: [], hostNetwork: maybe})")
                           .Text()),
            (std::vector<std::string>{
                "spec.pod.tolerations: expected a list of mappings, got a mapping",
                "spec.pod.env[0].name: required: a non-empty string",
                "spec.pod.env[1]: expected a mapping, got 'oops'",
                "spec.pod.affinity: expected a mapping, got a list",
                "spec.pod.hostNetwork: expected true or false, got 'maybe'",
            }));
}

}  // namespace
}  // namespace skrull::api
