#include "controller/reconcile/decide.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "controller/reconcile/names.h"

namespace skrull::controller {
namespace {

constexpr char kPending[] = "Pending";
constexpr char kRunning[] = "Running";
constexpr char kRestarting[] = "Restarting";
constexpr char kSucceeded[] = "Succeeded";
constexpr char kFailed[] = "Failed";
constexpr char kSuspended[] = "Suspended";

// Container waiting reasons that mean the pod will not start by itself.
constexpr const char* kStuckReasons[] = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName",
                                         "CreateContainerConfigError", "CreateContainerError"};

const json& At(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Str(const json& j, const char* key) {
  const json& v = At(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t Int(const json& j, const char* key, int64_t fallback) {
  const json& v = At(j, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

bool Terminal(const std::string& phase) { return phase == kSucceeded || phase == kFailed; }

// What one pod is doing, read from its status.
struct PodView {
  std::string name;
  int node = -1;
  int attempt = -1;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  bool deleting = false;
  std::optional<Clock::time_point> created;
  std::string stuck;    // why it cannot start, e.g. "ImagePullBackOff: ..." ("" = not known stuck)
  std::string failure;  // for Failed pods: "exit code 1 (Error)", "OOMKilled", ...

  bool Live() const { return !deleting && !Terminal(phase); }
};

PodView View(const json& pod) {
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
  if (v.phase.empty()) v.phase = kPending;
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
  if (v.phase == kFailed && v.failure.empty()) {
    v.failure = Str(status, "reason").empty() ? "failed" : Str(status, "reason");
    if (!Str(status, "message").empty()) v.failure += ": " + Str(status, "message");
  }
  return v;
}

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

class StatusBuilder {
 public:
  StatusBuilder(const json& old, Clock::time_point now)
      : old_(old.is_object() ? old : json::object()), status_(old_), now_(FormatTime(now)) {
    if (!status_.contains("conditions") || !status_["conditions"].is_array()) {
      status_["conditions"] = json::array();
    }
  }

  json& status() { return status_; }
  const json& old() const { return old_; }
  std::string phase() const { return Str(status_, "phase"); }

  // Sets the phase with its condition True (others of the phase set False).
  void Phase(const std::string& phase, const std::string& reason, const std::string& message) {
    status_["phase"] = phase;
    status_["reason"] = reason;
    status_["message"] = message;
    for (const char* type : {kRunning, kRestarting, kSucceeded, kFailed, kSuspended}) {
      if (type == phase) {
        Condition(type, true, reason, message);
      } else if (HasCondition(type)) {
        Condition(type, false, reason, message);
      }
    }
    if (phase != kSuspended) Condition("Created", true, "PodsCreated", "pods of the job exist");
    if (Terminal(phase) && Str(status_, "completionTime").empty()) {
      status_["completionTime"] = now_;
    }
  }

  void Condition(const std::string& type, bool value, const std::string& reason,
                 const std::string& message) {
    const std::string s = value ? "True" : "False";
    for (json& c : status_["conditions"]) {
      if (Str(c, "type") != type) continue;
      if (Str(c, "status") != s) c["lastTransitionTime"] = now_;
      c["status"] = s;
      c["reason"] = reason;
      c["message"] = message;
      return;
    }
    status_["conditions"].push_back({{"type", type},
                                     {"status", s},
                                     {"reason", reason},
                                     {"message", message},
                                     {"lastTransitionTime", now_}});
  }

  const std::string& now() const { return now_; }

 private:
  bool HasCondition(const std::string& type) const {
    for (const json& c : status_["conditions"]) {
      if (Str(c, "type") == type) return true;
    }
    return false;
  }

  json old_;
  json status_;
  std::string now_;
};

void DeleteLive(const std::vector<PodView>& pods, Decision* d) {
  for (const PodView& p : pods) {
    if (p.Live()) d->delete_pods.push_back(p.name);
  }
}

// Smallest positive wait, for requeue_after.
void RequeueWithin(std::chrono::seconds wait, Decision* d) {
  if (wait.count() <= 0) wait = std::chrono::seconds(1);
  if (d->requeue_after.count() == 0 || wait < d->requeue_after) d->requeue_after = wait;
}

void Transition(StatusBuilder& sb, Decision* d, const std::string& phase, const std::string& reason,
                const std::string& message, bool warning) {
  if (sb.phase() != phase || Str(sb.status(), "reason") != reason) {
    d->events.push_back({warning ? "Warning" : "Normal", reason, message});
  }
  sb.Phase(phase, reason, message);
}

// Terminal jobs: cleanPodPolicy and the TTL.
void Finished(const api::JobSpec& spec, const std::vector<PodView>& pods, StatusBuilder& sb,
              Clock::time_point now, Decision* d) {
  const api::RunPolicy& rp = spec.run_policy;
  for (const PodView& p : pods) {
    if (p.deleting) continue;
    if (rp.clean_pod_policy == api::CleanPodPolicy::kAll ||
        (rp.clean_pod_policy == api::CleanPodPolicy::kRunning && !Terminal(p.phase))) {
      d->delete_pods.push_back(p.name);
    }
  }
  if (rp.ttl_seconds_after_finished > 0) {
    const auto done = ParseTime(Str(sb.status(), "completionTime"));
    const auto expiry = done.value_or(now) + std::chrono::seconds(rp.ttl_seconds_after_finished);
    if (now >= expiry) {
      d->delete_job = true;
    } else {
      RequeueWithin(std::chrono::duration_cast<std::chrono::seconds>(expiry - now), d);
    }
  }
}

}  // namespace

std::string FormatTime(Clock::time_point t) {
  const std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<Clock::time_point> ParseTime(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  std::string rest = text.substr(static_cast<size_t>(consumed));
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    rest = rest.substr(i);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t tt = timegm(&tm);
  if (tt == static_cast<std::time_t>(-1)) return std::nullopt;
  return Clock::from_time_t(tt);
}

Decision Decide(const JobObservation& o) {
  Decision d;
  const json& meta = At(o.job, "metadata");
  StatusBuilder sb(At(o.job, "status"), o.now);
  sb.status()["observedGeneration"] = Int(meta, "generation", 0);
  auto finish = [&]() {
    std::sort(d.delete_pods.begin(), d.delete_pods.end());
    d.delete_pods.erase(std::unique(d.delete_pods.begin(), d.delete_pods.end()),
                        d.delete_pods.end());
    d.status = sb.status();
    d.status_changed = d.status != sb.old();
    return d;
  };

  const std::string origin = "skrulljob " + Str(meta, "namespace") + "/" + Str(meta, "name");
  StatusOr<api::JobSpec> spec = api::LoadJobSpec(SpecDocument(o.job), origin);
  std::vector<PodView> pods;
  for (const json& p : o.pods) pods.push_back(View(p));
  if (!spec.ok()) {
    Transition(sb, &d, kFailed, "InvalidSpec", spec.status().message(), true);
    DeleteLive(pods, &d);
    return finish();
  }

  d.spec = *spec;
  const std::string phase = sb.phase();
  if (Terminal(phase)) {
    Finished(*spec, pods, sb, o.now, &d);
    return finish();
  }
  if (spec->run_policy.suspend) {
    DeleteLive(pods, &d);
    Transition(sb, &d, kSuspended, "Suspended", "spec.runPolicy.suspend is true; no pods run",
               false);
    sb.status().erase("startTime");
    return finish();
  }

  const int attempt = static_cast<int>(Int(sb.status(), "restarts", 0));
  JobContext ctx;
  ctx.uid = Str(meta, "uid");
  ctx.api_version = Str(o.job, "apiVersion").empty() ? ctx.api_version : Str(o.job, "apiVersion");
  ctx.attempt = attempt;
  ctx.default_trainer_image = o.default_trainer_image;
  ctx.trainer_service_account = o.trainer_service_account;
  if (spec->tuning.enabled) {
    ctx.bucket_size_override_tokens = Int(At(sb.status(), "tuning"), "nextBucketSizeTokens", 0);
  }
  StatusOr<DesiredObjects> desired = BuildDesired(*spec, ctx);
  if (!desired.ok()) {
    Transition(sb, &d, kFailed, "InvalidSpec", desired.status().message(), true);
    DeleteLive(pods, &d);
    return finish();
  }
  sb.status()["bucketSizeTokens"] = ctx.bucket_size_override_tokens > 0
                                        ? ctx.bucket_size_override_tokens
                                        : spec->scheduler.bucket_size_tokens;

  // Children that carry the spec.
  if (!o.config_map) {
    d.create.push_back(desired->config_map);
  } else if (At(At(*o.config_map, "data"), kJobSpecFileName) != desired->job_yaml) {
    json cm = desired->config_map;
    cm["metadata"]["resourceVersion"] = Str(At(*o.config_map, "metadata"), "resourceVersion");
    d.update_config_map = cm;
  }
  if (!o.service) d.create.push_back(desired->service);

  // Pods: the current attempt's by node; older attempts' must be gone first,
  // or two node-0 pods would share the rendezvous DNS name.
  const int nodes = spec->parallelism.nodes;
  std::vector<const PodView*> current(static_cast<size_t>(nodes), nullptr);
  bool older_live = false;
  for (const PodView& p : pods) {
    if (p.attempt == attempt && p.node >= 0 && p.node < nodes && !p.deleting) {
      current[static_cast<size_t>(p.node)] = &p;
    } else if (p.Live()) {
      d.delete_pods.push_back(p.name);
      older_live = true;
    } else if (p.deleting && !Terminal(p.phase)) {
      older_live = true;
    }
  }

  int running = 0, succeeded = 0, missing = 0;
  const PodView* failed = nullptr;
  const PodView* stuck = nullptr;
  const api::RunPolicy& rp = spec->run_policy;
  for (const PodView* p : current) {
    if (p == nullptr) {
      ++missing;
      continue;
    }
    if (p->phase == kRunning) ++running;
    if (p->phase == kSucceeded) ++succeeded;
    if (p->phase == kFailed && failed == nullptr) failed = p;
    if (p->phase == kPending && rp.start_deadline_seconds > 0 && p->created) {
      const auto deadline = *p->created + std::chrono::seconds(rp.start_deadline_seconds);
      if (o.now >= deadline) {
        if (stuck == nullptr) stuck = p;
      } else {
        RequeueWithin(std::chrono::duration_cast<std::chrono::seconds>(deadline - o.now), &d);
      }
    }
  }
  sb.status()["nodes"] = {{"desired", nodes},
                          {"running", running},
                          {"succeeded", succeeded},
                          {"failed", failed ? 1 : 0},
                          {"missing", missing}};
  std::vector<PodView> attempt_pods;
  for (const PodView* p : current) {
    if (p) attempt_pods.push_back(*p);
  }

  if (stuck != nullptr) {
    DeleteLive(attempt_pods, &d);
    Transition(sb, &d, kFailed, "StartDeadlineExceeded",
               "pod " + stuck->name + " not running " + std::to_string(rp.start_deadline_seconds) +
                   " s after it was created (spec.runPolicy.startDeadlineSeconds)" +
                   (stuck->stuck.empty() ? "" : ": " + stuck->stuck),
               true);
    Finished(*spec, pods, sb, o.now, &d);
    return finish();
  }
  const int64_t bucket_in_use = sb.status()["bucketSizeTokens"].get<int64_t>();
  auto attempt_end = [&] {
    AttemptEnd end;
    end.attempt = attempt;
    end.bucket_size_tokens = bucket_in_use;
    end.ended = o.now;
    return end;
  };
  if (failed != nullptr) {
    DeleteLive(attempt_pods, &d);
    const std::string why = "pod " + failed->name + " failed: " + failed->failure;
    AttemptEnd end = attempt_end();
    end.failure = why;
    for (const PodView& p : attempt_pods) {
      if (p.phase == kFailed && (p.failure.find("OOMKilled") != std::string::npos ||
                                 p.failure.rfind("exit code 137", 0) == 0)) {
        end.died_of_memory = true;
      }
    }
    d.attempt_ended = end;
    if (attempt < rp.backoff_limit) {
      sb.status()["restarts"] = attempt + 1;
      sb.status().erase("startTime");
      Transition(sb, &d, kRestarting, "PodFailed",
                 why + "; restarting every node (restart " + std::to_string(attempt + 1) + " of " +
                     std::to_string(rp.backoff_limit) + ", resuming from the newest checkpoint)",
                 true);
    } else {
      Transition(sb, &d, kFailed, "BackoffLimitExceeded",
                 why + "; spec.runPolicy.backoffLimit " + std::to_string(rp.backoff_limit) +
                     " restarts used",
                 true);
      Finished(*spec, pods, sb, o.now, &d);
    }
    return finish();
  }
  if (succeeded == nodes) {
    AttemptEnd end = attempt_end();
    end.succeeded = true;
    d.attempt_ended = end;
    Transition(sb, &d, kSucceeded, "Completed", "every node finished", false);
    Finished(*spec, pods, sb, o.now, &d);
    return finish();
  }
  const bool all_running = running + succeeded == nodes && running > 0;
  if (all_running && Str(sb.status(), "startTime").empty()) sb.status()["startTime"] = sb.now();
  if (rp.active_deadline_seconds > 0) {
    if (auto start = ParseTime(Str(sb.status(), "startTime"))) {
      const auto deadline = *start + std::chrono::seconds(rp.active_deadline_seconds);
      if (o.now >= deadline) {
        DeleteLive(attempt_pods, &d);
        Transition(sb, &d, kFailed, "DeadlineExceeded",
                   "running longer than spec.runPolicy.activeDeadlineSeconds " +
                       std::to_string(rp.active_deadline_seconds) + " s",
                   true);
        Finished(*spec, pods, sb, o.now, &d);
        return finish();
      }
      RequeueWithin(std::chrono::duration_cast<std::chrono::seconds>(deadline - o.now), &d);
    }
  }

  if (missing > 0 && !older_live) {
    for (int node = 0; node < nodes; ++node) {
      if (current[static_cast<size_t>(node)] == nullptr) {
        d.create.push_back(desired->pods[static_cast<size_t>(node)]);
      }
    }
    sb.status()["nodes"]["missing"] = 0;  // created now: the status says what exists after
    if (rp.start_deadline_seconds > 0) {
      RequeueWithin(std::chrono::seconds(rp.start_deadline_seconds), &d);
    }
  }
  if (all_running) {
    Transition(
        sb, &d, kRunning, "AllNodesRunning",
        "attempt " + std::to_string(attempt) + ": " + std::to_string(nodes) + " node(s) running",
        false);
  } else if (phase != kRestarting || !older_live) {
    Transition(sb, &d, kPending, "Starting",
               "attempt " + std::to_string(attempt) + ": " + std::to_string(running) + " of " +
                   std::to_string(nodes) + " node(s) running",
               false);
  }
  return finish();
}

}  // namespace skrull::controller
