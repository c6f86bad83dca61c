#include "controller/reconcile/decide.h"

#include <algorithm>

#include "controller/reconcile/json_fields.h"
#include "controller/reconcile/names.h"
#include "trainer/metrics/oom_record.h"

namespace skrull::controller {
namespace {

// Container waiting reasons that mean the pod will not start by itself.
constexpr const char* kStuckReasons[] = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName",
                                         "CreateContainerConfigError", "CreateContainerError"};
// Kubernetes' pod phases that Decide reads (the job phases share the names
// Pending, Running, Succeeded and Failed, but are not the same thing).
constexpr char kPodPending[] = "Pending";
constexpr char kPodRunning[] = "Running";
constexpr char kPodSucceeded[] = "Succeeded";
constexpr char kPodFailed[] = "Failed";

using fields::At;
using fields::Int;
using fields::Str;

bool TerminalPhase(const std::string& phase) {
  return phase == kPhaseSucceeded || phase == kPhaseFailed;
}

std::chrono::seconds Until(Clock::time_point now, Clock::time_point then) {
  return std::chrono::duration_cast<std::chrono::seconds>(then - now);
}

// Smallest positive wait, for requeue_after.
void RequeueWithin(std::chrono::seconds wait, std::chrono::seconds* requeue_after) {
  if (wait.count() <= 0) wait = std::chrono::seconds(1);
  if (requeue_after->count() == 0 || wait < *requeue_after) *requeue_after = wait;
}

// ------------------------------------------------------------ ObservePods

// What one pod is doing, read from its status.
struct PodView {
  std::string name;
  int node = -1;
  int attempt = -1;
  std::string phase;  // the pod's: Pending, Running, Succeeded, Failed, Unknown
  bool deleting = false;
  std::optional<Clock::time_point> created;
  std::string stuck;    // why it cannot start, e.g. "ImagePullBackOff: ..." ("" = not known stuck)
  std::string failure;  // for Failed pods: "exit code 1 (Error)", "OOMKilled", ...

  bool Terminal() const { return phase == kPodSucceeded || phase == kPodFailed; }
  bool Live() const { return !deleting && !Terminal(); }
  // The kernel's OOM killer (OOMKilled, 137), or the trainer's own exit
  // status after a CUDA out-of-memory error (trainer/metrics/oom_record.h).
  bool DiedOfMemory() const {
    return phase == kPodFailed && (failure.find("OOMKilled") != std::string::npos ||
                                   ExitedWith(137) || ExitedWith(metrics::kOutOfMemoryExitCode));
  }
  // failure is "exit code <code>", maybe followed by " (reason)" or ": message".
  bool ExitedWith(int code) const {
    const std::string prefix = "exit code " + std::to_string(code);
    return failure.rfind(prefix, 0) == 0 &&
           (failure.size() == prefix.size() || failure[prefix.size()] == ' ' ||
            failure[prefix.size()] == ':');
  }
};

PodView ObservePod(const json& pod) {
  PodView v;
  const json& meta = At(pod, "metadata");
  const json& labels = At(meta, "labels");
  v.name = Str(meta, "name");
  try {
    v.node = std::stoi(Str(labels, kLabelNodeRank));
    v.attempt = std::stoi(Str(labels, kLabelAttempt));
  } catch (const std::exception&) {
    // Not one of ours in the expected shape: node/attempt stay -1.
  }
  v.deleting = At(meta, "deletionTimestamp").is_string();
  v.created = ParseTime(Str(meta, "creationTimestamp"));
  const json& status = At(pod, "status");
  v.phase = Str(status, "phase");
  if (v.phase.empty()) v.phase = kPodPending;
  for (const json& c : At(status, "conditions")) {
    if (Str(c, "type") == "PodScheduled" && Str(c, "status") == "False" &&
        Str(c, "reason") == "Unschedulable") {
      v.stuck = "Unschedulable: " + Str(c, "message");
    }
  }
  for (const json& cs : At(status, "containerStatuses")) {
    const json& state = At(cs, "state");
    const json& waiting = At(state, "waiting");
    const std::string reason = Str(waiting, "reason");
    if (std::find(std::begin(kStuckReasons), std::end(kStuckReasons), reason) !=
        std::end(kStuckReasons)) {
      v.stuck = reason + ": " + Str(waiting, "message");
    }
    const json& term = At(state, "terminated");
    if (term.is_object() && Int(term, "exitCode", 0) != 0) {
      const std::string r = Str(term, "reason");
      v.failure = "exit code " + std::to_string(Int(term, "exitCode", 0)) +
                  (r.empty() ? "" : " (" + r + ")");
      const std::string m = Str(term, "message");
      if (!m.empty()) v.failure += ": " + m;
    }
  }
  if (v.phase == kPodFailed && v.failure.empty()) {
    v.failure = Str(status, "reason").empty() ? "failed" : Str(status, "reason");
    if (!Str(status, "message").empty()) v.failure += ": " + Str(status, "message");
  }
  return v;
}

std::vector<PodView> ObservePods(const std::vector<json>& pods) {
  std::vector<PodView> views;
  for (const json& p : pods) views.push_back(ObservePod(p));
  return views;
}

// --------------------------------------------------------- ObserveAttempt

// The current attempt's pods and what is left of older attempts.
struct AttemptView {
  int attempt = 0;
  std::vector<const PodView*> by_node;  // nullptr: no pod for that node
  std::vector<std::string> older_live;  // older attempts' live pods: to delete
  // Older attempts' pods still running or terminating: the next attempt
  // waits for them, or two node-0 pods would share the rendezvous DNS name.
  bool older_present = false;
  NodeCounts counts;
  const PodView* failed = nullptr;  // the first failed pod of the attempt

  std::vector<const PodView*> Pods() const {
    std::vector<const PodView*> pods;
    for (const PodView* p : by_node) {
      if (p != nullptr) pods.push_back(p);
    }
    return pods;
  }
};

AttemptView ObserveAttempt(const std::vector<PodView>& pods, int attempt, int nodes) {
  AttemptView a;
  a.attempt = attempt;
  a.by_node.assign(static_cast<size_t>(nodes), nullptr);
  for (const PodView& p : pods) {
    if (p.attempt == attempt && p.node >= 0 && p.node < nodes && !p.deleting) {
      a.by_node[static_cast<size_t>(p.node)] = &p;
    } else if (p.Live()) {
      a.older_live.push_back(p.name);
      a.older_present = true;
    } else if (p.deleting && !p.Terminal()) {
      a.older_present = true;
    }
  }
  a.counts.desired = nodes;
  for (const PodView* p : a.by_node) {
    if (p == nullptr) {
      ++a.counts.missing;
    } else if (p->phase == kPodRunning) {
      ++a.counts.running;
    } else if (p->phase == kPodSucceeded) {
      ++a.counts.succeeded;
    } else if (p->phase == kPodFailed && a.failed == nullptr) {
      a.failed = p;
    }
  }
  a.counts.failed = a.failed != nullptr ? 1 : 0;
  return a;
}

// ----------------------------------------------------------- ComputePhase

// What this pass does to the job, before it is applied to the status.
struct Outcome {
  std::string phase;  // "" = keep the current one (Restarting while old pods go)
  std::string reason;
  std::string message;
  bool warning = false;
  bool stop_attempt = false;   // delete the attempt's live pods
  bool restart = false;        // status.restarts + 1, startTime cleared
  bool finished = false;       // terminal: cleanPodPolicy and TTL apply
  bool start_missing = false;  // create the pods of nodes that have none
  bool mark_started = false;   // every node runs for the first time: startTime = now
  std::optional<AttemptEnd> ended;
  std::chrono::seconds requeue_after{0};
};

AttemptEnd EndOf(const AttemptView& a, int64_t bucket_size_tokens, Clock::time_point now) {
  AttemptEnd end;
  end.attempt = a.attempt;
  end.bucket_size_tokens = bucket_size_tokens;
  end.ended = now;
  return end;
}

// The first pod of the attempt still Pending past startDeadlineSeconds, if
// any; otherwise requeues for the earliest deadline to come.
const PodView* PastStartDeadline(const AttemptView& a, const api::RunPolicy& rp,
                                 Clock::time_point now, Outcome* out) {
  if (rp.start_deadline_seconds <= 0) return nullptr;
  const PodView* stuck = nullptr;
  for (const PodView* p : a.Pods()) {
    if (p->phase != kPodPending || !p->created) continue;
    const auto deadline = *p->created + std::chrono::seconds(rp.start_deadline_seconds);
    if (now >= deadline) {
      if (stuck == nullptr) stuck = p;
    } else {
      RequeueWithin(Until(now, deadline), &out->requeue_after);
    }
  }
  return stuck;
}

Outcome ComputePhase(const AttemptView& a, const api::JobSpec& spec, const JobStatus& status,
                     Clock::time_point now) {
  Outcome out;
  const api::RunPolicy& rp = spec.run_policy;
  const int nodes = a.counts.desired;
  const std::string attempt_text = "attempt " + std::to_string(a.attempt);

  if (const PodView* stuck = PastStartDeadline(a, rp, now, &out)) {
    out.phase = kPhaseFailed;
    out.reason = kReasonStartDeadlineExceeded;
    out.message = "pod " + stuck->name + " not running " +
                  std::to_string(rp.start_deadline_seconds) +
                  " s after it was created (spec.runPolicy.startDeadlineSeconds)" +
                  (stuck->stuck.empty() ? "" : ": " + stuck->stuck);
    out.warning = out.stop_attempt = out.finished = true;
    return out;
  }
  if (a.failed != nullptr) {
    const std::string why = "pod " + a.failed->name + " failed: " + a.failed->failure;
    out.ended = EndOf(a, status.bucket_size_tokens, now);
    out.ended->failure = why;
    for (const PodView* p : a.Pods()) out.ended->died_of_memory |= p->DiedOfMemory();
    out.warning = out.stop_attempt = true;
    if (a.attempt < rp.backoff_limit) {
      out.phase = kPhaseRestarting;
      out.reason = kReasonPodFailed;
      out.message = why + "; restarting every node (restart " + std::to_string(a.attempt + 1) +
                    " of " + std::to_string(rp.backoff_limit) +
                    ", resuming from the newest checkpoint)";
      out.restart = true;
    } else {
      out.phase = kPhaseFailed;
      out.reason = kReasonBackoffLimitExceeded;
      out.message = why + "; spec.runPolicy.backoffLimit " + std::to_string(rp.backoff_limit) +
                    " restarts used";
      out.finished = true;
    }
    return out;
  }
  if (a.counts.succeeded == nodes) {
    out.ended = EndOf(a, status.bucket_size_tokens, now);
    out.ended->succeeded = true;
    out.phase = kPhaseSucceeded;
    out.reason = kReasonCompleted;
    out.message = "every node finished";
    out.finished = true;
    return out;
  }
  const bool all_running = a.counts.running + a.counts.succeeded == nodes && a.counts.running > 0;
  out.mark_started = all_running && !status.start_time;
  const std::optional<Clock::time_point> start = out.mark_started ? now : status.start_time;
  if (rp.active_deadline_seconds > 0 && start) {
    const auto deadline = *start + std::chrono::seconds(rp.active_deadline_seconds);
    if (now >= deadline) {
      out.phase = kPhaseFailed;
      out.reason = kReasonDeadlineExceeded;
      out.message = "running longer than spec.runPolicy.activeDeadlineSeconds " +
                    std::to_string(rp.active_deadline_seconds) + " s";
      out.warning = out.stop_attempt = out.finished = true;
      return out;
    }
    RequeueWithin(Until(now, deadline), &out.requeue_after);
  }
  out.start_missing = a.counts.missing > 0 && !a.older_present;
  if (out.start_missing && rp.start_deadline_seconds > 0) {
    RequeueWithin(std::chrono::seconds(rp.start_deadline_seconds), &out.requeue_after);
  }
  if (all_running) {
    out.phase = kPhaseRunning;
    out.reason = kReasonAllNodesRunning;
    out.message = attempt_text + ": " + std::to_string(nodes) + " node(s) running";
  } else if (status.phase != kPhaseRestarting || !a.older_present) {
    out.phase = kPhasePending;
    out.reason = kReasonStarting;
    out.message = attempt_text + ": " + std::to_string(a.counts.running) + " of " +
                  std::to_string(nodes) + " node(s) running";
  }
  return out;
}

// ------------------------------------------------------------------ Status

// Edits the typed status: phases with their conditions, and the Events of
// phase changes.
class StatusBuilder {
 public:
  StatusBuilder(JobStatus status, Clock::time_point now) : status_(std::move(status)), now_(now) {}

  JobStatus& status() { return status_; }

  // Sets the phase with its condition True (others of the phases set
  // False), recording an Event when the phase or the reason changes.
  void Transition(const std::string& phase, const std::string& reason, const std::string& message,
                  bool warning, Decision* d) {
    if (status_.phase != phase || status_.reason != reason) {
      d->events.push_back({warning ? kEventWarning : kEventNormal, reason, message});
    }
    status_.phase = phase;
    status_.reason = reason;
    status_.message = message;
    for (const char* type :
         {kPhaseRunning, kPhaseRestarting, kPhaseSucceeded, kPhaseFailed, kPhaseSuspended}) {
      if (type == phase) {
        Condition(type, true, reason, message);
      } else if (Find(type) != nullptr) {
        Condition(type, false, reason, message);
      }
    }
    if (phase != kPhaseSuspended) {
      Condition(kConditionCreated, true, kReasonPodsCreated, "pods of the job exist");
    }
    if (TerminalPhase(phase) && !status_.completion_time) status_.completion_time = now_;
  }

 private:
  JobCondition* Find(const std::string& type) {
    for (JobCondition& c : status_.conditions) {
      if (c.type == type) return &c;
    }
    return nullptr;
  }

  void Condition(const std::string& type, bool value, const std::string& reason,
                 const std::string& message) {
    JobCondition* c = Find(type);
    if (c == nullptr) {
      status_.conditions.push_back({type, value, reason, message, now_});
      return;
    }
    if (c->status != value) c->last_transition_time = now_;
    c->status = value;
    c->reason = reason;
    c->message = message;
  }

  JobStatus status_;
  Clock::time_point now_;
};

void DeleteLive(const std::vector<const PodView*>& pods, Decision* d) {
  for (const PodView* p : pods) {
    if (p->Live()) d->delete_pods.push_back(p->name);
  }
}

std::vector<const PodView*> All(const std::vector<PodView>& pods) {
  std::vector<const PodView*> all;
  for (const PodView& p : pods) all.push_back(&p);
  return all;
}

// Terminal jobs: cleanPodPolicy and the TTL.
void Finished(const api::JobSpec& spec, const std::vector<PodView>& pods, const JobStatus& status,
              Clock::time_point now, Decision* d) {
  const api::RunPolicy& rp = spec.run_policy;
  for (const PodView& p : pods) {
    if (p.deleting) continue;
    if (rp.clean_pod_policy == api::CleanPodPolicy::kAll ||
        (rp.clean_pod_policy == api::CleanPodPolicy::kRunning && !p.Terminal())) {
      d->delete_pods.push_back(p.name);
    }
  }
  if (rp.ttl_seconds_after_finished > 0) {
    const auto expiry =
        status.completion_time.value_or(now) + std::chrono::seconds(rp.ttl_seconds_after_finished);
    if (now >= expiry) {
      d->delete_job = true;
    } else {
      RequeueWithin(Until(now, expiry), &d->requeue_after);
    }
  }
}

// --------------------------------------------------------- DesiredObjects

// The part of the SkrullJob that api::LoadJobSpec reads (Kubernetes adds
// metadata fields such as uid and managedFields that the spec does not know).
std::string SpecDocument(const json& job) {
  const json& meta = At(job, "metadata");
  json doc = {{"apiVersion", Str(job, "apiVersion")},
              {"kind", Str(job, "kind")},
              {"metadata", {{"name", Str(meta, "name")}, {"namespace", Str(meta, "namespace")}}},
              {"spec", At(job, "spec").is_null() ? json::object() : At(job, "spec")}};
  if (At(meta, "labels").is_object()) doc["metadata"]["labels"] = At(meta, "labels");
  if (At(meta, "annotations").is_object()) doc["metadata"]["annotations"] = At(meta, "annotations");
  return doc.dump();
}

JobContext AttemptContext(const JobObservation& o, const api::JobSpec& spec,
                          const JobStatus& status) {
  const json& meta = At(o.job, "metadata");
  JobContext ctx;
  ctx.uid = Str(meta, "uid");
  if (!Str(o.job, "apiVersion").empty()) ctx.api_version = Str(o.job, "apiVersion");
  ctx.attempt = status.restarts;
  ctx.default_trainer_image = o.default_trainer_image;
  ctx.trainer_service_account = o.trainer_service_account;
  ctx.pod_security = o.pod_security;
  if (spec.tuning.enabled) {
    ctx.bucket_size_override_tokens = Int(status.tuning, "nextBucketSizeTokens", 0);
  }
  return ctx;
}

// The ConfigMap (created, or replaced when its job YAML changed) and the
// Service: the children that carry the spec.
void ReconcileChildren(const JobObservation& o, const DesiredObjects& desired, Decision* d) {
  if (!o.config_map) {
    d->create.push_back(desired.config_map);
  } else if (At(At(*o.config_map, "data"), kJobSpecFileName) != desired.job_yaml) {
    json cm = desired.config_map;
    cm["metadata"]["resourceVersion"] = Str(At(*o.config_map, "metadata"), "resourceVersion");
    d->update_config_map = cm;
  }
  if (!o.service) d->create.push_back(desired.service);
}

// ------------------------------------------------------------------ Decide

// A job whose spec cannot run: Failed, its live pods deleted.
void FailInvalidSpec(const std::string& message, const std::vector<PodView>& pods,
                     StatusBuilder& sb, Decision* d) {
  sb.Transition(kPhaseFailed, kReasonInvalidSpec, message, true, d);
  DeleteLive(All(pods), d);
}

// Applies a running job's Outcome: pods stopped or started, the status.
void Apply(const Outcome& out, const AttemptView& a, const std::vector<PodView>& pods,
           const JobObservation& o, const JobContext& ctx, const api::JobSpec& spec,
           StatusBuilder& sb, Decision* d) {
  const Clock::time_point now = o.now;
  JobStatus& status = sb.status();
  if (out.stop_attempt) DeleteLive(a.Pods(), d);
  d->attempt_ended = out.ended;
  if (out.requeue_after.count() > 0) RequeueWithin(out.requeue_after, &d->requeue_after);
  if (out.restart) {
    status.restarts = a.attempt + 1;
    status.start_time.reset();
  }
  if (out.mark_started) status.start_time = now;
  if (out.start_missing) {
    // In bounded batches: the status says what exists after this pass, and
    // the next pass (soon) creates the next batch.
    const int batch = std::max(1, o.max_pod_creates_per_pass);
    int created = 0;
    for (size_t node = 0; node < a.by_node.size() && created < batch; ++node) {
      if (a.by_node[node] != nullptr) continue;
      d->create.push_back(BuildPod(spec, ctx, static_cast<int>(node)));
      ++created;
    }
    status.nodes->missing = a.counts.missing - created;
    if (status.nodes->missing > 0) RequeueWithin(kPodBatchRequeue, &d->requeue_after);
  }
  if (!out.phase.empty()) sb.Transition(out.phase, out.reason, out.message, out.warning, d);
  if (out.finished) Finished(spec, pods, status, now, d);
}

Decision Finish(const JobStatus& observed, StatusBuilder& sb, Decision d) {
  std::sort(d.delete_pods.begin(), d.delete_pods.end());
  d.delete_pods.erase(std::unique(d.delete_pods.begin(), d.delete_pods.end()), d.delete_pods.end());
  d.status = sb.status();
  d.status_changed = d.status != observed;
  return d;
}

}  // namespace

Decision Decide(const JobObservation& o) {
  Decision d;
  const json& meta = At(o.job, "metadata");
  const JobStatus observed = JobStatusFromJson(At(o.job, "status"));
  StatusBuilder sb(observed, o.now);
  JobStatus& status = sb.status();
  status.observed_generation = Int(meta, "generation", 0);

  const std::string origin = "skrulljob " + Str(meta, "namespace") + "/" + Str(meta, "name");
  StatusOr<api::JobSpec> spec = api::LoadJobSpec(SpecDocument(o.job), origin);
  const std::vector<PodView> pods = ObservePods(o.pods);
  if (!spec.ok()) {
    FailInvalidSpec(spec.status().message(), pods, sb, &d);
    return Finish(observed, sb, std::move(d));
  }
  d.spec = *spec;
  if (TerminalPhase(status.phase)) {
    Finished(*spec, pods, status, o.now, &d);
    return Finish(observed, sb, std::move(d));
  }
  if (spec->run_policy.suspend) {
    DeleteLive(All(pods), &d);
    sb.Transition(kPhaseSuspended, kReasonSuspended, "spec.runPolicy.suspend is true; no pods run",
                  false, &d);
    status.start_time.reset();
    return Finish(observed, sb, std::move(d));
  }

  const int64_t world = int64_t{spec->parallelism.nodes} * spec->parallelism.procs_per_node;
  if (world > o.max_world_size) {
    sb.Transition(kPhaseFailed, kReasonTooLarge,
                  "spec.parallelism: nodes (" + std::to_string(spec->parallelism.nodes) +
                      ") x procsPerNode (" + std::to_string(spec->parallelism.procs_per_node) +
                      ") = " + std::to_string(world) + " ranks; this controller runs jobs of at " +
                      "most " + std::to_string(o.max_world_size) +
                      " (skrull-controller serve --max-world-size)",
                  true, &d);
    DeleteLive(All(pods), &d);
    return Finish(observed, sb, std::move(d));
  }
  const JobContext ctx = AttemptContext(o, *spec, status);
  StatusOr<DesiredObjects> desired = BuildDesiredChildren(*spec, ctx);
  if (!desired.ok()) {
    FailInvalidSpec(desired.status().message(), pods, sb, &d);
    return Finish(observed, sb, std::move(d));
  }
  status.bucket_size_tokens = ctx.bucket_size_override_tokens > 0
                                  ? ctx.bucket_size_override_tokens
                                  : spec->scheduler.bucket_size_tokens;
  ReconcileChildren(o, *desired, &d);

  const AttemptView attempt = ObserveAttempt(pods, ctx.attempt, spec->parallelism.nodes);
  d.delete_pods.insert(d.delete_pods.end(), attempt.older_live.begin(), attempt.older_live.end());
  status.nodes = attempt.counts;
  const Outcome outcome = ComputePhase(attempt, *spec, status, o.now);
  Apply(outcome, attempt, pods, o, ctx, *spec, sb, &d);
  return Finish(observed, sb, std::move(d));
}

}  // namespace skrull::controller
