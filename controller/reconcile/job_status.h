// JobStatus: a SkrullJob's .status as a typed value, and every phase,
// condition type and reason the controller writes as a named constant: the
// strings users see in `kubectl get skrulljobs`, in Events and in alerts
// (docs/deploy.md). Decide (decide.h) works on this struct; JSON happens only
// at the edge: JobStatusFromJson when the job is read, JobStatusMergePatch
// when the status is written.
//
// Pure value types and functions; thread-compatible.
#ifndef SKRULL_CONTROLLER_RECONCILE_JOB_STATUS_H_
#define SKRULL_CONTROLLER_RECONCILE_JOB_STATUS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace skrull::controller {

using Clock = std::chrono::system_clock;

// status.phase. Each phase but Pending also names a condition type that is
// True while the job is in it.
// Pods of the current attempt are created; not all of them run yet.
inline constexpr char kPhasePending[] = "Pending";
// Every pod of the current attempt runs (status.startTime is set).
inline constexpr char kPhaseRunning[] = "Running";
// A pod failed and runPolicy.backoffLimit allows another attempt: the
// attempt's live pods are being deleted; the next one resumes from the
// newest checkpoint.
inline constexpr char kPhaseRestarting[] = "Restarting";
// Every pod of the attempt succeeded. Terminal.
inline constexpr char kPhaseSucceeded[] = "Succeeded";
// The job cannot or will not finish; status.reason says why. Terminal.
inline constexpr char kPhaseFailed[] = "Failed";
// runPolicy.suspend is true: no pods run; clearing it starts again.
inline constexpr char kPhaseSuspended[] = "Suspended";

// Condition type True once the job's objects exist (all phases but
// Suspended).
inline constexpr char kConditionCreated[] = "Created";

// Reasons: status.reason, the reason of the phase's condition and of the
// Event recorded when the phase or reason changes.
// Pending: waiting for every node's pod to run.
inline constexpr char kReasonStarting[] = "Starting";
// Running: every node's pod runs.
inline constexpr char kReasonAllNodesRunning[] = "AllNodesRunning";
// Restarting: a pod of the attempt failed; the whole group restarts.
inline constexpr char kReasonPodFailed[] = "PodFailed";
// Succeeded: every node finished.
inline constexpr char kReasonCompleted[] = "Completed";
// Suspended: spec.runPolicy.suspend.
inline constexpr char kReasonSuspended[] = "Suspended";
// Failed: the spec does not load or cannot be rendered into pods.
inline constexpr char kReasonInvalidSpec[] = "InvalidSpec";
// Failed: a pod failed with runPolicy.backoffLimit restarts used.
inline constexpr char kReasonBackoffLimitExceeded[] = "BackoffLimitExceeded";
// Failed: a pod did not run within runPolicy.startDeadlineSeconds
// (unschedulable, image pull failing: a restart would not help).
inline constexpr char kReasonStartDeadlineExceeded[] = "StartDeadlineExceeded";
// Failed: running longer than runPolicy.activeDeadlineSeconds.
inline constexpr char kReasonDeadlineExceeded[] = "DeadlineExceeded";
// Failed: nodes x procsPerNode is over what this controller runs
// (skrull-controller serve --max-world-size).
inline constexpr char kReasonTooLarge[] = "TooLarge";
// The Created condition's reason.
inline constexpr char kReasonPodsCreated[] = "PodsCreated";
// Events only (reconciler.h): the tuner judged an attempt, or could not.
inline constexpr char kReasonTuned[] = "Tuned";
inline constexpr char kReasonTuningFailed[] = "TuningFailed";

// Event types.
inline constexpr char kEventNormal[] = "Normal";
inline constexpr char kEventWarning[] = "Warning";

// One entry of status.conditions (metav1.Condition's shape).
struct JobCondition {
  std::string type;
  bool status = false;  // "True" / "False" in JSON
  std::string reason;
  std::string message;
  // Changes only when `status` does.
  std::optional<Clock::time_point> last_transition_time;

  bool operator==(const JobCondition& o) const {
    return type == o.type && status == o.status && reason == o.reason && message == o.message &&
           last_transition_time == o.last_transition_time;
  }
};

// status.nodes: the current attempt's pods by phase.
struct NodeCounts {
  int desired = 0;
  int running = 0;
  int succeeded = 0;
  int failed = 0;   // 0 or 1: the first failure ends the attempt
  int missing = 0;  // not created (yet), after this pass's creations

  bool operator==(const NodeCounts& o) const {
    return desired == o.desired && running == o.running && succeeded == o.succeeded &&
           failed == o.failed && missing == o.missing;
  }
};

struct JobStatus {
  std::string phase;                            // a kPhase* constant; "" before the first reconcile
  std::string reason;                           // a kReason* constant
  std::string message;                          // for people: what happened, naming pods and fields
  int64_t observed_generation = 0;              // metadata.generation last decided on
  int restarts = 0;                             // attempts restarted so far = the current attempt
  std::optional<Clock::time_point> start_time;  // when every node first ran
  std::optional<Clock::time_point> completion_time;  // when a terminal phase began
  int64_t bucket_size_tokens = 0;  // what the current attempt runs with; 0 = unset
  std::optional<NodeCounts> nodes;
  std::vector<JobCondition> conditions;
  // Owned by the reconciler (reconciler.h): the tuner's verdict, whose
  // "nextBucketSizeTokens" the next attempt runs with, and the training
  // progress. Null when absent.
  nlohmann::json tuning;
  nlohmann::json progress;

  bool operator==(const JobStatus& o) const;
  bool operator!=(const JobStatus& o) const { return !(*this == o); }
};

// "2026-11-23T03:10:16Z" (UTC, seconds), as Kubernetes writes times.
std::string FormatTime(Clock::time_point t);
// Parses FormatTime's output (fractional seconds and "+00:00" accepted);
// nullopt for anything else.
std::optional<Clock::time_point> ParseTime(const std::string& text);

// The JSON of the CRD's status schema; unset fields are left out.
nlohmann::json JobStatusToJson(const JobStatus& status);
// Reads `status` as the API server returns it. Lenient: a field of the
// wrong type, an unparsable time or an unknown field counts as unset (the
// next write replaces it).
JobStatus JobStatusFromJson(const nlohmann::json& status);
// The JSON merge patch (RFC 7386) that turns `observed` (.status as read)
// into `status`: changed fields, and null for fields it no longer has.
nlohmann::json JobStatusMergePatch(const nlohmann::json& observed, const JobStatus& status);

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_RECONCILE_JOB_STATUS_H_
