#include "controller/reconcile/reconciler.h"

#include <initializer_list>
#include <random>

#include "controller/reconcile/names.h"

namespace skrull::controller {
namespace {

using kube::Resource;

std::string OwnerUid(const json& object) {
  const json& meta = object.value("metadata", json::object());
  for (const json& ref : meta.value("ownerReferences", json::array())) {
    if (ref.value("controller", false)) return ref.value("uid", "");
  }
  return "";
}

kube::Resource ResourceOf(const json& object) {
  const std::string kind = object.value("kind", "");
  if (kind == "Pod") return kube::PodsResource();
  if (kind == "Service") return kube::ServicesResource();
  return kube::ConfigMapsResource();
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (int i = 0; i < 10; ++i) s += kAlphabet[rng() % 36];
  return s;
}

json Pick(const json& from, std::initializer_list<const char*> keys) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (const char* key : keys) {
    auto it = from.find(key);
    if (it != from.end()) out[key] = *it;
  }
  return out;
}

}  // namespace

json CompactPod(const json& pod) {
  json out = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  out["metadata"] = Pick(pod.value("metadata", json::object()),
                         {"name", "namespace", "labels", "ownerReferences", "creationTimestamp",
                          "deletionTimestamp", "resourceVersion", "uid"});
  const json status = pod.value("status", json::object());
  json compact = Pick(status, {"phase", "reason", "message"});
  if (status.contains("conditions") && status["conditions"].is_array()) {
    compact["conditions"] = json::array();
    for (const json& c : status["conditions"]) {
      compact["conditions"].push_back(Pick(c, {"type", "status", "reason", "message"}));
    }
  }
  if (status.contains("containerStatuses") && status["containerStatuses"].is_array()) {
    compact["containerStatuses"] = json::array();
    for (const json& c : status["containerStatuses"]) {
      compact["containerStatuses"].push_back(Pick(c, {"name", "state"}));
    }
  }
  out["status"] = std::move(compact);
  return out;
}

Reconciler::Reconciler(kube::KubeApi* api, ReconcilerOptions options)
    : api_(api), options_(std::move(options)) {}

StatusOr<ReconcileResult> Reconciler::ReconcileJob(const std::string& ns, const std::string& name) {
  ReconcileResult result;
  const std::string where = "skrulljob " + ns + "/" + name;
  StatusOr<json> job = api_->Get(kube::SkrullJobsResource(), ns, name);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kNotFound) return result;  // deleted: GC cleans up
    return job.status().WithContext(where);
  }
  result.found = true;
  const json& meta = (*job)["metadata"];
  if (meta.contains("deletionTimestamp")) return result;  // children go with it (ownerRefs)
  const std::string uid = meta.value("uid", "");

  JobObservation o;
  o.job = *job;
  o.now = options_.now();
  o.default_trainer_image = options_.default_trainer_image;
  o.trainer_service_account = options_.trainer_service_account;
  o.pod_security = options_.pod_security;
  o.max_world_size = options_.max_world_size;
  o.max_pod_creates_per_pass = options_.max_pod_creates_per_pass;
  const std::string selector = std::string(kLabelJobName) + "=" + name;
  for (const Resource& r :
       {kube::PodsResource(), kube::ServicesResource(), kube::ConfigMapsResource()}) {
    StatusOr<kube::ListResult> list = r.plural == "pods"
                                          ? api_->ListProjected(r, ns, selector, CompactPod)
                                          : api_->List(r, ns, selector);
    if (!list.ok()) return list.status().WithContext(where);
    for (json& item : list->items) {
      if (OwnerUid(item) != uid) continue;  // someone else's, or an older job's
      const std::string item_name = item["metadata"].value("name", "");
      if (r.plural == "pods") {
        o.pods.push_back(std::move(item));
      } else if (r.plural == "services" && item_name == ServiceName(name)) {
        o.service = std::move(item);
      } else if (r.plural == "configmaps" && item_name == SpecConfigMapName(name)) {
        o.config_map = std::move(item);
      }
    }
  }

  Decision d = Decide(o);
  if (d.attempt_ended && d.spec && d.spec->tuning.enabled && options_.tune) Tune(*job, &d);
  if (d.spec && options_.progress && d.status.phase == kPhaseRunning) {
    // Best effort: a metrics outage must not stall the job's reconcile.
    StatusOr<json> progress = options_.progress(*d.spec);
    if (progress.ok() && d.status.progress != *progress) {
      d.status.progress = *progress;
      d.status_changed = true;
    }
  }
  SKRULL_RETURN_IF_ERROR(Apply(o, d, &result).WithContext(where));
  result.phase = d.status.phase;
  result.requeue_after = d.requeue_after;
  return result;
}

Status Reconciler::Apply(const JobObservation& o, const Decision& d, ReconcileResult* r) {
  const json& meta = o.job["metadata"];
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  for (const json& object : d.create) {
    StatusOr<json> created = api_->Create(ResourceOf(object), ns, object);
    if (!created.ok() && !kube::IsAlreadyExists(created.status())) return created.status();
    if (created.ok()) ++r->created;
  }
  if (d.update_config_map) {
    StatusOr<json> replaced = api_->Replace(kube::ConfigMapsResource(), ns, SpecConfigMapName(name),
                                            *d.update_config_map, /*status_subresource=*/false);
    if (!replaced.ok()) return replaced.status();
  }
  for (const std::string& pod : d.delete_pods) {
    Status s = api_->Delete(kube::PodsResource(), ns, pod, kube::Propagation::kBackground);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    if (s.ok()) ++r->deleted;
  }
  for (const JobEvent& e : d.events) {
    // Events are best effort: a cluster that refuses them still runs jobs.
    (void)RecordEvent(o.job, e);
  }
  if (d.status_changed) {
    const json patch = JobStatusMergePatch(o.job.value("status", json::object()), d.status);
    StatusOr<json> patched =
        api_->Patch(kube::SkrullJobsResource(), ns, name, kube::PatchType::kMerge,
                    json{{"status", patch}}, /*status_subresource=*/true);
    if (!patched.ok()) return patched.status();
    r->status_written = true;
  }
  if (d.delete_job) {
    Status s = api_->Delete(kube::SkrullJobsResource(), ns, name, kube::Propagation::kBackground);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  return OkStatus();
}

void Reconciler::Tune(const json& job, Decision* d) {
  const AttemptEnd& end = *d->attempt_ended;
  StatusOr<json> verdict = options_.tune(*d->spec, job, end);
  json tuning = d->status.tuning.is_object() ? d->status.tuning : json::object();
  if (verdict.ok()) {
    tuning = *verdict;
    tuning["attempt"] = end.attempt;
    d->events.push_back({kEventNormal, kReasonTuned, tuning.value("reason", "bucketSize judged")});
  } else {
    // Keep the last recommendation; say why this attempt gave none.
    tuning["error"] = verdict.status().message();
    tuning["attempt"] = end.attempt;
    d->events.push_back({kEventWarning, kReasonTuningFailed, verdict.status().message()});
  }
  d->status.tuning = tuning;
  d->status_changed = true;
}

Status Reconciler::RecordEvent(const json& job, const JobEvent& e) {
  const json& meta = job["metadata"];
  const std::string now = FormatTime(options_.now());
  json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", meta.value("name", "") + "." + RandomSuffix()},
        {"namespace", meta.value("namespace", "")}}},
      {"involvedObject",
       {{"apiVersion", job.value("apiVersion", "skrull.io/v1alpha1")},
        {"kind", "SkrullJob"},
        {"name", meta.value("name", "")},
        {"namespace", meta.value("namespace", "")},
        {"uid", meta.value("uid", "")},
        {"resourceVersion", meta.value("resourceVersion", "")}}},
      {"type", e.type},
      {"reason", e.reason},
      {"message", e.message.substr(0, 1024)},
      {"source", {{"component", kManagedByValue}}},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
  };
  return api_->Create(kube::EventsResource(), meta.value("namespace", ""), event).status();
}

}  // namespace skrull::controller
