#include "controller/reconcile/desired.h"

#include "controller/reconcile/names.h"
#include "trainer/dist/env.h"

namespace skrull::controller {
namespace {

namespace env = skrull::dist::env;

json Labels(const api::JobSpec& spec) {
  json labels = json::object();
  for (const auto& [key, value] : spec.labels) labels[key] = value;
  labels[kLabelName] = "skrull";
  labels[kLabelComponent] = "trainer";
  labels[kLabelManagedBy] = kManagedByValue;
  labels[kLabelJobName] = spec.name;
  return labels;
}

// The job's annotations, less those kubectl keeps for itself (the whole
// last-applied object would otherwise ride on every pod).
json Annotations(const api::JobSpec& spec) {
  json annotations = json::object();
  for (const auto& [key, value] : spec.annotations) {
    if (key.rfind(kKubectlAnnotationPrefix, 0) != 0) annotations[key] = value;
  }
  return annotations;
}

json Metadata(const std::string& name, const api::JobSpec& spec, const JobContext& ctx) {
  json owner = {{"apiVersion", ctx.api_version},
                {"kind", ctx.kind},
                {"name", spec.name},
                {"uid", ctx.uid},
                {"controller", true},
                {"blockOwnerDeletion", true}};
  json meta = {{"name", name},
               {"namespace", spec.namespace_name},
               {"labels", Labels(spec)},
               {"ownerReferences", json::array({owner})}};
  json annotations = Annotations(spec);
  if (!annotations.empty()) meta["annotations"] = std::move(annotations);
  return meta;
}

std::string Image(const api::JobSpec& spec, const JobContext& ctx) {
  const api::ImageSpec defaults;
  const bool spec_default =
      spec.image.repository == defaults.repository && spec.image.tag == api::DefaultImageTag();
  if (spec_default && !ctx.default_trainer_image.empty()) return ctx.default_trainer_image;
  return spec.image.repository + ":" + spec.image.tag;
}

json EnvVar(const char* name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json Resources(const api::JobSpec& spec) {
  json requests = json::object(), limits = json::object();
  if (!spec.resources.cpu.empty()) requests["cpu"] = spec.resources.cpu;
  if (!spec.resources.memory.empty()) {
    requests["memory"] = spec.resources.memory;
    limits["memory"] = spec.resources.memory;
  }
  const int gpus = spec.resources.gpus_per_proc * spec.parallelism.procs_per_node;
  if (gpus > 0) {
    requests["nvidia.com/gpu"] = std::to_string(gpus);
    limits["nvidia.com/gpu"] = std::to_string(gpus);
  }
  for (const auto& [name, quantity] : spec.pod.requests) requests[name] = quantity;
  for (const auto& [name, quantity] : spec.pod.limits) limits[name] = quantity;
  json r = json::object();
  if (!requests.empty()) r["requests"] = requests;
  if (!limits.empty()) r["limits"] = limits;
  return r;
}

// The Pod Security Standards' "restricted" container settings, plus what
// the controller was told NCCL may have.
json ContainerSecurityContext(const TrainerPodSecurity& security) {
  json capabilities = {{"drop", json::array({"ALL"})}};
  if (security.ipc_lock) capabilities["add"] = json::array({"IPC_LOCK"});
  return {
      {"allowPrivilegeEscalation", false}, {"runAsNonRoot", true}, {"capabilities", capabilities}};
}

// JSON text from the spec (api::PodTemplateSpec), parsed; `fallback` when
// empty. The api parser wrote it, so it parses.
json ParsedOr(const std::string& text, json fallback) {
  return text.empty() ? std::move(fallback) : json::parse(text);
}

// spec.pod: scheduling and the trainer container's extras. What the
// controller wrote first stays (its env vars, volumes and mounts come first;
// a user's env var of the same name, e.g. NCCL_DEBUG, comes after and wins).
void ApplyPodTemplate(const api::PodTemplateSpec& t, json* pod_spec) {
  json& spec = *pod_spec;
  json& container = spec["containers"][0];
  if (!t.node_selector.empty()) spec["nodeSelector"] = t.node_selector;
  if (!t.tolerations.empty()) spec["tolerations"] = json::parse(t.tolerations);
  if (!t.affinity.empty()) spec["affinity"] = json::parse(t.affinity);
  if (!t.priority_class_name.empty()) spec["priorityClassName"] = t.priority_class_name;
  if (!t.scheduler_name.empty()) spec["schedulerName"] = t.scheduler_name;
  for (json& e : ParsedOr(t.env, json::array())) container["env"].push_back(std::move(e));
  for (json& v : ParsedOr(t.volumes, json::array())) spec["volumes"].push_back(std::move(v));
  for (json& m : ParsedOr(t.volume_mounts, json::array())) {
    container["volumeMounts"].push_back(std::move(m));
  }
  if (!t.image_pull_secrets.empty()) spec["imagePullSecrets"] = json::parse(t.image_pull_secrets);
  if (t.host_network) {
    spec["hostNetwork"] = true;
    spec["dnsPolicy"] = "ClusterFirstWithHostNet";  // Service names still resolve
  }
}

json Pod(const api::JobSpec& spec, const JobContext& ctx, int node) {
  const std::string& job = spec.name;
  json meta = Metadata(PodName(job, node, ctx.attempt), spec, ctx);
  meta["labels"][kLabelNodeRank] = std::to_string(node);
  meta["labels"][kLabelAttempt] = std::to_string(ctx.attempt);

  const std::string master =
      PodHostname(job, 0) + "." + ServiceName(job) + "." + spec.namespace_name + ".svc";
  json env_vars = json::array({
      EnvVar(env::kNnodes, std::to_string(spec.parallelism.nodes)),
      EnvVar(env::kNodeRank, std::to_string(node)),
      EnvVar(env::kRunId, job + "-" + std::to_string(ctx.attempt)),
  });
  if (spec.parallelism.nodes > 1) {  // one node: the launcher rendezvouses on loopback
    env_vars.push_back(EnvVar(env::kMasterAddr, master));
    env_vars.push_back(EnvVar(env::kMasterPort, std::to_string(kRendezvousPort)));
  }
  if (spec.resources.gpus_per_proc > 0) env_vars.push_back(EnvVar("NCCL_DEBUG", "WARN"));

  json ports = json::array();
  if (spec.metrics.port > 0) {
    for (int l = 0; l < spec.parallelism.procs_per_node; ++l) {
      ports.push_back({{"name", "metrics-" + std::to_string(l)},
                       {"containerPort", spec.metrics.port + l},
                       {"protocol", "TCP"}});
    }
  }
  if (node == 0 && spec.parallelism.nodes > 1) {
    ports.push_back(
        {{"name", "rendezvous"}, {"containerPort", kRendezvousPort}, {"protocol", "TCP"}});
  }

  json mounts = json::array({
      {{"name", "job-spec"}, {"mountPath", kJobSpecMountPath}, {"readOnly", true}},
  });
  json volumes = json::array({
      {{"name", "job-spec"}, {"configMap", {{"name", SpecConfigMapName(job)}}}},
  });
  if (ctx.pod_security.shared_memory) {
    // The runtime's 64 MiB /dev/shm is too small for NCCL's shared-memory transport.
    mounts.push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
    volumes.push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}});
  }
  if (!spec.storage.claim_name.empty()) {
    mounts.push_back({{"name", "storage"},
                      {"mountPath", spec.storage.mount_path},
                      {"readOnly", spec.storage.read_only}});
    volumes.push_back(
        {{"name", "storage"},
         {"persistentVolumeClaim",
          {{"claimName", spec.storage.claim_name}, {"readOnly", spec.storage.read_only}}}});
  }

  json container = {
      {"name", kTrainerContainerName},
      {"image", Image(spec, ctx)},
      {"imagePullPolicy", spec.image.pull_policy},
      {"command", json::array({"skrull-trainer"})},
      {"args", json::array({"--job", std::string(kJobSpecMountPath) + "/" + kJobSpecFileName})},
      {"env", env_vars},
      {"ports", ports},
      {"resources", Resources(spec)},
      {"volumeMounts", mounts},
      {"securityContext", ContainerSecurityContext(ctx.pod_security)},
  };
  json pod_spec = {
      {"restartPolicy", "Never"},               // the controller restarts the whole group
      {"automountServiceAccountToken", false},  // trainers never call the API
      {"hostname", PodHostname(job, node)},
      {"subdomain", ServiceName(job)},
      {"terminationGracePeriodSeconds", ctx.termination_grace_seconds},
      {"securityContext",
       {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"containers", json::array({container})},
      {"volumes", volumes},
  };
  if (!ctx.trainer_service_account.empty()) {
    pod_spec["serviceAccountName"] = ctx.trainer_service_account;
  }
  ApplyPodTemplate(spec.pod, &pod_spec);
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", pod_spec}};
}

}  // namespace

int MaxJobNameLength(int nodes) {
  const int digits = static_cast<int>(std::to_string(std::max(0, nodes - 1)).size());
  return 63 - static_cast<int>(std::string("-node-").size()) - digits;
}

StatusOr<std::string> TrainerJobYaml(const api::JobSpec& spec, const JobContext& ctx) {
  api::JobSpec s = spec;
  if (ctx.attempt > 0 && s.training.resume_from.empty()) {
    s.training.resume_from = api::kResumeLatest;
  }
  if (ctx.bucket_size_override_tokens > 0) {
    SKRULL_ASSIGN_OR_RETURN(s, api::WithBucketSize(s, ctx.bucket_size_override_tokens,
                                                   "status.tuning.nextBucketSizeTokens"));
  }
  // Pods serve /metrics on all addresses unless the job names one.
  if (s.metrics.address.empty()) s.metrics.address = api::kPodMetricsAddress;
  return api::ToYaml(s);
}

json BuildPod(const api::JobSpec& spec, const JobContext& ctx, int node) {
  return Pod(spec, ctx, node);
}

StatusOr<DesiredObjects> BuildDesired(const api::JobSpec& spec, const JobContext& ctx) {
  StatusOr<DesiredObjects> d = BuildDesiredChildren(spec, ctx);
  if (!d.ok()) return d;
  for (int node = 0; node < spec.parallelism.nodes; ++node) d->pods.push_back(Pod(spec, ctx, node));
  return d;
}

StatusOr<DesiredObjects> BuildDesiredChildren(const api::JobSpec& spec, const JobContext& ctx) {
  const int max_name = MaxJobNameLength(spec.parallelism.nodes);
  if (static_cast<int>(spec.name.size()) > max_name) {
    return InvalidArgumentError(
        "metadata.name: at most " + std::to_string(max_name) + " characters for a job of " +
        std::to_string(spec.parallelism.nodes) + " node(s), so that pod hostnames '" +
        PodHostname(spec.name, spec.parallelism.nodes - 1) +
        "' stay DNS labels of at most 63 (got " + std::to_string(spec.name.size()) + ")");
  }
  DesiredObjects d;
  SKRULL_ASSIGN_OR_RETURN(d.job_yaml, TrainerJobYaml(spec, ctx));
  d.config_map = {{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", Metadata(SpecConfigMapName(spec.name), spec, ctx)},
                  {"data", {{kJobSpecFileName, d.job_yaml}}}};
  d.service = {{"apiVersion", "v1"},
               {"kind", "Service"},
               {"metadata", Metadata(ServiceName(spec.name), spec, ctx)},
               {"spec",
                {{"clusterIP", "None"},
                 // DNS records before the pods are Ready: ranks resolve node 0 at start.
                 {"publishNotReadyAddresses", true},
                 {"selector", {{kLabelJobName, spec.name}}},
                 {"ports", json::array({{{"name", "rendezvous"},
                                         {"port", kRendezvousPort},
                                         {"targetPort", kRendezvousPort},
                                         {"protocol", "TCP"}}})}}}};
  return d;
}

}  // namespace skrull::controller
