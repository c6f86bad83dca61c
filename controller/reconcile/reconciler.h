// Reconciler: observe -> Decide (pure, decide.h) -> apply, for one SkrullJob,
// against a KubeApi (a real API server or MemoryKubeApi).
//
// Observe lists the job's pods, Service and ConfigMap by the label
// skrull.io/job-name and keeps only those whose controller ownerReference is
// this job's uid (a re-created job of the same name never adopts the old
// one's pods). Of each pod it keeps only what Decide reads (CompactPod, as
// each page of the list arrives), so a pass holds a few hundred bytes per
// pod, not the API server's whole object with its managedFields.
//
// Apply creates (AlreadyExists is fine: a previous pass did it), replaces
// the ConfigMap, deletes pods (NotFound is fine), records Events,
// and writes .status through the status subresource with a merge patch only
// when it changed. Running it again on an unchanged world does nothing.
//
// Thread safety: one ReconcileJob per job at a time (the work queue of
// controller.h guarantees it); different jobs may run concurrently.
#ifndef SKRULL_CONTROLLER_RECONCILE_RECONCILER_H_
#define SKRULL_CONTROLLER_RECONCILE_RECONCILER_H_

#include <chrono>
#include <functional>
#include <string>

#include "common/status.h"
#include "controller/kube/kube_api.h"
#include "controller/reconcile/decide.h"

namespace skrull::controller {

// Judges an ended attempt for spec.tuning (e.g. from Prometheus, see
// controller/tuner/): returns the object written to status.tuning, whose
// "nextBucketSizeTokens" (when present) the next attempt runs with.
using TuneFn =
    std::function<StatusOr<json>(const api::JobSpec& spec, const json& job, const AttemptEnd& end)>;

// Training progress of a running job (e.g. from Prometheus): the object
// written to status.progress ({step, loss, tokensPerSecond, ...}).
using ProgressFn = std::function<StatusOr<json>(const api::JobSpec& spec)>;

struct ReconcilerOptions {
  std::string default_trainer_image;                            // see JobContext
  std::string trainer_service_account;                          // see JobContext
  TrainerPodSecurity pod_security;                              // see JobContext
  int max_world_size = api::kMaxWorldSize;                      // see JobObservation
  int max_pod_creates_per_pass = kDefaultMaxPodCreatesPerPass;  // see JobObservation
  std::function<Clock::time_point()> now = [] { return Clock::now(); };
  TuneFn tune;          // null: status.tuning is left alone
  ProgressFn progress;  // null: no status.progress
};

struct ReconcileResult {
  bool found = false;  // false: the job no longer exists (nothing was done)
  std::string phase;   // status.phase after this pass
  std::chrono::seconds requeue_after{0};
  int created = 0, deleted = 0;
  bool status_written = false;
};

// The fields of a pod that Decide reads: metadata name, namespace, labels,
// ownerReferences, creation and deletion timestamps, resourceVersion; status
// phase, reason, message, conditions (type, status, reason, message) and
// containerStatuses' state.
json CompactPod(const json& pod);

class Reconciler {
 public:
  Reconciler(kube::KubeApi* api, ReconcilerOptions options);

  // Errors: the API's (Unavailable, conflicts...), with the job's name; the
  // caller retries with backoff.
  StatusOr<ReconcileResult> ReconcileJob(const std::string& ns, const std::string& name);

 private:
  Status Apply(const JobObservation& o, const Decision& d, ReconcileResult* r);
  Status RecordEvent(const json& job, const JobEvent& e);
  // Runs options_.tune for d->attempt_ended into d->status["tuning"].
  void Tune(const json& job, Decision* d);

  kube::KubeApi* api_;
  ReconcilerOptions options_;
};

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_RECONCILE_RECONCILER_H_
