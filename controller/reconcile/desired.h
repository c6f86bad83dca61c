// BuildDesired: the Kubernetes objects one attempt of a SkrullJob should have.
// Pure: no I/O, no clock; the same inputs give the same JSON, so the
// reconciler can compare what exists with what it would create.
//
// One attempt is one launch of the whole group: `nodes` pods, each running
// `skrull-trainer --job /etc/skrull/job.yaml`, whose launcher starts the
// node's procsPerNode ranks (trainer/dist/launcher.h) wired by the env vars
// of trainer/dist/env.h. A failure of any rank ends the attempt; the next
// attempt resumes from the newest checkpoint (resumeFrom: latest).
#ifndef SKRULL_CONTROLLER_RECONCILE_DESIRED_H_
#define SKRULL_CONTROLLER_RECONCILE_DESIRED_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::controller {

using json = nlohmann::json;

// What trainer pods may do beyond the restricted default. By default every
// trainer pod runs as non-root (runAsNonRoot; the images' user is 65532),
// with seccomp RuntimeDefault, no privilege escalation and every capability
// dropped (the Pod Security Standards' "restricted" profile). What NCCL may
// need is opt-in, per controller (docs/deploy.md "Trainer pod security"):
struct TrainerPodSecurity {
  // Adds the IPC_LOCK capability (pinning memory for InfiniBand/RDMA).
  bool ipc_lock = false;
  // Mounts a memory-backed emptyDir at /dev/shm: NCCL's shared-memory
  // transport needs more than the runtime's 64 MiB. Counts against the
  // pod's memory limit.
  bool shared_memory = false;
};

// What the controller knows about the job object and its own settings.
struct JobContext {
  // The SkrullJob object: owner of everything created.
  std::string uid;
  std::string api_version = "skrull.io/v1alpha1";
  std::string kind = "SkrullJob";
  int attempt = 0;  // 0 for the first launch
  // BucketSize for this attempt from the tuner; 0 = the spec's own.
  int64_t bucket_size_override_tokens = 0;
  // Trainer image used when the spec left spec.image at its defaults
  // ("" = the spec's). Set by `skrull-controller serve --trainer-image`.
  std::string default_trainer_image;
  std::string trainer_service_account;  // "" = the namespace's default
  TrainerPodSecurity pod_security;
  int termination_grace_seconds = 120;  // time for a final checkpoint on SIGTERM
};

// Every object carries the job's own metadata.labels and metadata.annotations
// (docs/job-spec.md), under the controller's labels (app.kubernetes.io/*,
// skrull.io/*), which win on a clash so selectors keep working; annotations
// kubectl writes for itself (kubectl.kubernetes.io/*) are not copied.
struct DesiredObjects {
  json config_map;         // "<job>-spec": the job YAML every rank loads
  json service;            // headless "<job>": stable DNS for the rendezvous
  std::vector<json> pods;  // one per node, node order
  std::string job_yaml;    // the ConfigMap's job.yaml (what the trainer reads)
};

// The job YAML the trainer pods load: the spec as given, plus, for attempts
// after the first, resumeFrom: latest (when unset) and the tuned BucketSize
// (api::WithBucketSize: InvalidArgument when the spec does not allow it).
StatusOr<std::string> TrainerJobYaml(const api::JobSpec& spec, const JobContext& ctx);

// InvalidArgument when the job cannot be represented (a name too long for
// the pods' DNS hostnames, a tuned BucketSize the spec does not allow),
// naming the field and the limit.
StatusOr<DesiredObjects> BuildDesired(const api::JobSpec& spec, const JobContext& ctx);

// BuildDesired without the pods (DesiredObjects::pods empty): what the
// controller renders on every pass, so that its memory does not grow with
// the job's node count; it builds only the pods it creates (BuildPod).
StatusOr<DesiredObjects> BuildDesiredChildren(const api::JobSpec& spec, const JobContext& ctx);

// The pod of `node` (0 <= node < nodes), as BuildDesired's pods[node].
// REQUIRES: BuildDesiredChildren(spec, ctx) is OK.
json BuildPod(const api::JobSpec& spec, const JobContext& ctx, int node);

// Longest metadata.name BuildDesired accepts for `nodes` nodes (pod
// hostnames "<name>-node-<i>" must be DNS labels of at most 63 characters).
int MaxJobNameLength(int nodes);

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_RECONCILE_DESIRED_H_
