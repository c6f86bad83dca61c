// Decide: the level-triggered heart of the controller. From what exists now
// (the SkrullJob object and the pods, Service and ConfigMap it owns) and the
// time, it computes what to create, update and delete and the job's new
// .status. Pure: no I/O, so every transition is a table-driven unit test, and
// deciding again on the result changes nothing (idempotent).
//
// It runs in named stages, each a pure function of the one before:
//   ObservePods      pods -> what each is doing (phase, node, attempt, why stuck/failed)
//   ObserveAttempt   the current attempt's pods by node, counts, older attempts' leftovers
//   ComputePhase     -> an Outcome: the phase and reason, whether to stop the
//                    attempt, restart, finish, start missing pods, when to look again
//   DesiredObjects   BuildDesired (desired.h) -> children to create or update
//   Status           the Outcome applied to the typed JobStatus (job_status.h):
//                    phase, conditions, times, Events
//
// Phases, conditions and reasons are the constants of job_status.h:
//   Pending -> Running -> Succeeded; a failed pod -> Restarting -> Pending
//   (next attempt, resuming from the newest checkpoint) until
//   runPolicy.backoffLimit, then Failed; Failed also for a pod not Running
//   within startDeadlineSeconds, activeDeadlineSeconds passed, or an invalid
//   spec, or nodes x procsPerNode over max_world_size (TooLarge); Suspended
//   while runPolicy.suspend. Failed pods stay for their logs. Missing pods
//   are created max_pod_creates_per_pass at a time, in node order.
// Terminal phases apply cleanPodPolicy and ttlSecondsAfterFinished.
// Conditions (metav1.Condition shape) mirror the phase: Created, Running,
// Restarting, Succeeded, Failed, Suspended; lastTransitionTime changes only
// when a condition's status does.
#ifndef SKRULL_CONTROLLER_RECONCILE_DECIDE_H_
#define SKRULL_CONTROLLER_RECONCILE_DECIDE_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/reconcile/desired.h"
#include "controller/reconcile/job_status.h"

namespace skrull::controller {

// Pods one pass creates at most: a job of many nodes is started over several
// passes, its status written after each, so no pass holds more than this
// many pods' JSON (the controller's memory per job stays bounded).
inline constexpr int kDefaultMaxPodCreatesPerPass = 64;
// How soon the next pass runs when a pass left pods to create.
inline constexpr std::chrono::seconds kPodBatchRequeue{1};

struct JobObservation {
  json job;                        // the SkrullJob as read (metadata, spec, status)
  std::vector<json> pods;          // pods it owns (any attempt)
  std::optional<json> service;     // its headless Service, if it exists
  std::optional<json> config_map;  // its spec ConfigMap, if it exists
  Clock::time_point now;
  // Controller settings passed through to BuildDesired.
  std::string default_trainer_image;
  std::string trainer_service_account;
  TrainerPodSecurity pod_security;
  // A job with nodes x procsPerNode above this is Failed (reason TooLarge)
  // before any pod exists (skrull-controller serve --max-world-size).
  int max_world_size = api::kMaxWorldSize;
  // Pods created per pass at most (>= 1); see kDefaultMaxPodCreatesPerPass.
  int max_pod_creates_per_pass = kDefaultMaxPodCreatesPerPass;
};

struct JobEvent {
  std::string type;    // kEventNormal or kEventWarning
  std::string reason;  // a kReason* constant (job_status.h)
  std::string message;
};

// An attempt that ended in this pass (its pods failed or all succeeded):
// what the BucketSize tuner needs to judge it (reconciler.h).
struct AttemptEnd {
  int attempt = 0;
  int64_t bucket_size_tokens = 0;  // what the attempt ran with
  bool succeeded = false;
  // A pod was OOMKilled (or exited 137, killed by SIGKILL), or the trainer
  // exited 3 after a CUDA out-of-memory error.
  bool died_of_memory = false;
  std::string failure;  // "pod X failed: exit code 137 (OOMKilled)"; "" on success
  Clock::time_point ended;
};

struct Decision {
  std::vector<json> create;               // objects to create (ConfigMap, Service, pods)
  std::optional<json> update_config_map;  // replace the ConfigMap (its job YAML changed)
  std::vector<std::string> delete_pods;   // pod names
  bool delete_job = false;                // ttlSecondsAfterFinished has passed
  JobStatus status;                       // the whole new .status
  bool status_changed = false;            // status differs from the observed one
  std::vector<JobEvent> events;
  std::optional<api::JobSpec> spec;  // the parsed spec (absent when invalid)
  std::optional<AttemptEnd> attempt_ended;
  // Decide again after this long even if nothing changes (a deadline or TTL
  // expires then); 0 = only on changes.
  std::chrono::seconds requeue_after{0};
};

Decision Decide(const JobObservation& observed);

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_RECONCILE_DECIDE_H_
