#include "controller/kube/memory_kube_api.h"

#include <cstdio>
#include <ctime>
#include <random>
#include <utility>

#include "controller/kube/kube_errors.h"
#include "controller/kube/label_selector.h"
#include "controller/kube/object_rules.h"
#include "controller/kube/rest_path.h"

namespace skrull::kube {

namespace {

std::string ResourceKey(const Resource& r) { return r.prefix + "/" + r.plural; }
std::string ObjectKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

std::string SystemNowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string RandomHex8() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", static_cast<unsigned>(rd()));
  return buf;
}

// Five characters of [a-z0-9] for generateName, from a counter.
std::string NameSuffix(int64_t n) {
  static const char kChars[] = "bcdfghjklmnpqrstvwxz2456789";  // what the API server draws from
  std::string out;
  for (int i = 0; i < 5; ++i) {
    out += kChars[n % 27];
    n /= 27;
  }
  return out;
}

std::string Quoted(const Resource& r, const std::string& name) {
  return r.plural + " \"" + name + "\"";
}

}  // namespace

MemoryKubeApi::MemoryKubeApi(MemoryKubeApiOptions options)
    : options_(std::move(options)), uid_prefix_(RandomHex8()) {}

MemoryKubeApi::~MemoryKubeApi() {
  StopWatches();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return active_watches_ == 0; });
}

std::string MemoryKubeApi::Now() const {
  return options_.now_rfc3339 ? options_.now_rfc3339() : SystemNowRfc3339();
}

bool MemoryKubeApi::HasStatus(const Resource& r) const {
  return options_.plurals_without_status.count(r.plural) == 0;
}

std::string MemoryKubeApi::NextRv() { return std::to_string(++rv_); }

void MemoryKubeApi::Record(const std::string& resource, const std::string& ns,
                           WatchEvent::Type type, const json& object, const json& previous) {
  history_.push_back(Event{rv_, resource, ns, type, object, previous});
  while (history_.size() > options_.history_limit) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  changed_.notify_all();
}

Status MemoryKubeApi::CheckInjected(Verb verb, const Resource& r, const std::string& method,
                                    const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = injected_.begin(); it != injected_.end(); ++it) {
    if (it->verb != verb || (!it->plural.empty() && it->plural != r.plural)) continue;
    const int code = it->http_code;
    if (--it->count <= 0) injected_.erase(it);
    return KubeError(method, path, code, "injected by MemoryKubeApi::FailNext");
  }
  return OkStatus();
}

void MemoryKubeApi::FailNext(Verb verb, int count, int http_code, const std::string& plural) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count > 0) injected_.push_back(Injected{verb, plural, count, http_code});
}

void MemoryKubeApi::CompactHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

std::string MemoryKubeApi::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::to_string(rv_);
}

StatusOr<json*> MemoryKubeApi::FindLocked(const Resource& r, const std::string& ns,
                                          const std::string& name, const std::string& method,
                                          const std::string& path) {
  if (ns.empty() || name.empty()) {
    return KubeError(method, path, 400, "a namespace and a name are required");
  }
  auto objs = objects_.find(ResourceKey(r));
  if (objs != objects_.end()) {
    auto it = objs->second.find(ObjectKey(ns, name));
    if (it != objs->second.end()) return &it->second;
  }
  return KubeError(method, path, 404, Quoted(r, name) + " not found");
}

StatusOr<json> MemoryKubeApi::Get(const Resource& r, const std::string& ns,
                                  const std::string& name) {
  const std::string path = ObjectPath(r, ns, name);
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kGet, r, "GET", path));
  std::lock_guard<std::mutex> lock(mu_);
  SKRULL_ASSIGN_OR_RETURN(json * stored, FindLocked(r, ns, name, "GET", path));
  return *stored;
}

StatusOr<ListResult> MemoryKubeApi::List(const Resource& r, const std::string& ns,
                                         const std::string& label_selector) {
  SKRULL_ASSIGN_OR_RETURN(ListPageResult page, ListPage(r, ns, label_selector, 0, ""));
  return ListResult{std::move(page.items), std::move(page.resource_version)};
}

StatusOr<ListPageResult> MemoryKubeApi::ListPage(const Resource& r, const std::string& ns,
                                                 const std::string& label_selector, int64_t limit,
                                                 const std::string& continue_token) {
  std::string path = CollectionPath(r, ns);
  if (!label_selector.empty()) path += "?labelSelector=" + QueryEscape(label_selector);
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kList, r, "GET", path));
  StatusOr<LabelSelector> selector = LabelSelector::Parse(label_selector);
  if (!selector.ok()) return KubeError("GET", path, 400, selector.status().message());
  if (limit < 0) return KubeError("GET", path, 400, "limit must be >= 0");
  std::lock_guard<std::mutex> lock(mu_);
  int64_t list_rv = rv_;
  std::string after;
  if (!continue_token.empty()) {
    const size_t colon = continue_token.find(':');
    char* end = nullptr;
    list_rv = std::strtoll(continue_token.c_str(), &end, 10);
    if (colon == std::string::npos || end != continue_token.c_str() + colon || list_rv <= 0) {
      return KubeError("GET", path, 400, "invalid continue token \"" + continue_token + "\"");
    }
    if (list_rv < compacted_rv_) {
      return KubeError("GET", path, 410, "Expired",
                       "The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter.");
    }
    after = continue_token.substr(colon + 1);
  }
  ListPageResult page;
  page.resource_version = std::to_string(list_rv);
  auto objs = objects_.find(ResourceKey(r));
  if (objs == objects_.end()) return page;
  const std::string ns_prefix = ns.empty() ? "" : ns + "/";
  auto it = after.empty() ? objs->second.lower_bound(ns_prefix) : objs->second.upper_bound(after);
  for (; it != objs->second.end() && it->first.compare(0, ns_prefix.size(), ns_prefix) == 0; ++it) {
    if (!selector->MatchesObject(it->second)) continue;
    if (limit > 0 && static_cast<int64_t>(page.items.size()) == limit) {
      // Another match exists: say where the next page starts.
      page.continue_token = std::to_string(list_rv) + ":" + std::prev(it)->first;
      break;
    }
    page.items.push_back(it->second);
  }
  return page;
}

StatusOr<json> MemoryKubeApi::Create(const Resource& r, const std::string& ns, const json& object) {
  const std::string path = CollectionPath(r, ns);
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kCreate, r, "POST", path));
  if (ns.empty()) return KubeError("POST", path, 400, "a namespace is required");
  if (!object.is_object() || (object.contains("metadata") && !object["metadata"].is_object())) {
    return KubeError("POST", path, 400, "the body must be a JSON object with object metadata");
  }
  json obj = object;
  const std::string obj_ns = MetaString(obj, "namespace");
  if (!obj_ns.empty() && obj_ns != ns) {
    return KubeError("POST", path, 400,
                     "the namespace of the provided object (" + obj_ns +
                         ") does not match the namespace sent on the request (" + ns + ")");
  }
  const std::string kind = StringField(obj, "kind");
  if (!kind.empty() && kind != r.kind) {
    return KubeError(
        "POST", path, 400,
        "kind " + kind + " does not match the resource " + r.plural + " (" + r.kind + ")");
  }
  if (!MetaString(obj, "resourceVersion").empty()) {
    return KubeError("POST", path, 400,
                     "resourceVersion should not be set on objects to be created");
  }
  std::lock_guard<std::mutex> lock(mu_);
  Objects& objs = objects_[ResourceKey(r)];
  std::string name = MetaString(obj, "name");
  const std::string generate = MetaString(obj, "generateName");
  if (name.empty() && !generate.empty()) {
    do {
      name = generate + NameSuffix(++uid_counter_);
    } while (objs.count(ObjectKey(ns, name)) > 0);
  }
  if (name.empty()) {
    return KubeError("POST", path, 422,
                     "metadata.name: Required value: name or generateName is required");
  }
  const std::string key = ObjectKey(ns, name);
  if (objs.count(key) > 0) {
    return KubeError("POST", path, 409, "AlreadyExists", Quoted(r, name) + " already exists");
  }
  obj["kind"] = r.kind;
  obj["apiVersion"] = r.api_version;
  if (!obj.contains("metadata")) obj["metadata"] = json::object();
  json& meta = obj["metadata"];
  for (const char* field : {"deletionTimestamp", "deletionGracePeriodSeconds"}) meta.erase(field);
  meta["name"] = name;
  meta["namespace"] = ns;
  char uid[64];
  std::snprintf(uid, sizeof(uid), "%s-0000-4000-8000-%012llx", uid_prefix_.c_str(),
                static_cast<unsigned long long>(++uid_counter_));
  meta["uid"] = uid;
  meta["creationTimestamp"] = Now();
  meta["generation"] = 1;
  if (HasStatus(r)) {
    obj.erase("status");
    if (r.prefix == "/api/v1" && r.plural == "pods") obj["status"] = {{"phase", "Pending"}};
  }
  meta["resourceVersion"] = NextRv();
  objs[key] = obj;
  Record(ResourceKey(r), ns, WatchEvent::Type::kAdded, obj, nullptr);
  return obj;
}

StatusOr<json> MemoryKubeApi::Replace(const Resource& r, const std::string& ns,
                                      const std::string& name, const json& object,
                                      bool status_subresource) {
  const std::string path = ObjectPath(r, ns, name, status_subresource);
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kReplace, r, "PUT", path));
  std::lock_guard<std::mutex> lock(mu_);
  return UpdateLocked(r, ns, name, object, status_subresource, "PUT", path);
}

StatusOr<json> MemoryKubeApi::Patch(const Resource& r, const std::string& ns,
                                    const std::string& name, PatchType type, const json& patch,
                                    bool status_subresource) {
  const std::string path = ObjectPath(r, ns, name, status_subresource);
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kPatch, r, "PATCH", path));
  if (type == PatchType::kMerge ? !patch.is_object() : !patch.is_array()) {
    return KubeError("PATCH", path, 400,
                     type == PatchType::kMerge ? "a merge patch must be a JSON object"
                                               : "a JSON patch must be an array of operations");
  }
  std::lock_guard<std::mutex> lock(mu_);
  SKRULL_ASSIGN_OR_RETURN(json * stored, FindLocked(r, ns, name, "PATCH", path));
  StatusOr<json> patched = ApplyPatch(*stored, type, patch);
  if (!patched.ok()) return KubeError("PATCH", path, 422, patched.status().message());
  return UpdateLocked(r, ns, name, std::move(patched).value(), status_subresource, "PATCH", path);
}

StatusOr<json> MemoryKubeApi::UpdateLocked(const Resource& r, const std::string& ns,
                                           const std::string& name, json body,
                                           bool status_subresource, const std::string& method,
                                           const std::string& path) {
  if (status_subresource && !HasStatus(r)) {
    return KubeError(method, path, 404, "the server could not find the requested resource");
  }
  if (!body.is_object() || (body.contains("metadata") && !body["metadata"].is_object())) {
    return KubeError(method, path, 400, "the body must be a JSON object with object metadata");
  }
  SKRULL_ASSIGN_OR_RETURN(json * stored, FindLocked(r, ns, name, method, path));
  const json old = *stored;
  const std::string body_name = MetaString(body, "name");
  if (!body_name.empty() && body_name != name) {
    return KubeError(method, path, 400,
                     "the name of the object (" + body_name +
                         ") does not match the name on the URL (" + name + ")");
  }
  const std::string body_rv = MetaString(body, "resourceVersion");
  if (!body_rv.empty() && body_rv != MetaString(old, "resourceVersion")) {
    return KubeError(method, path, 409, "Conflict",
                     "Operation cannot be fulfilled on " + Quoted(r, name) +
                         ": the object has been modified; please apply your changes to the "
                         "latest version and try again");
  }
  json next;
  if (status_subresource) {
    next = old;
    next.erase("status");
    if (body.contains("status")) next["status"] = body["status"];
  } else {
    next = std::move(body);
    if (HasStatus(r)) {
      next.erase("status");
      if (old.contains("status")) next["status"] = old["status"];
    }
    if (!next.contains("metadata")) next["metadata"] = json::object();
    for (const char* field : {"namespace", "name", "uid", "creationTimestamp", "generation",
                              "deletionTimestamp", "deletionGracePeriodSeconds"}) {
      next["metadata"].erase(field);
      if (old["metadata"].contains(field)) next["metadata"][field] = old["metadata"][field];
    }
    next["kind"] = old["kind"];
    next["apiVersion"] = old["apiVersion"];
  }
  if (SpecPart(next) != SpecPart(old)) {
    next["metadata"]["generation"] = old["metadata"].value("generation", 0) + 1;
  }
  next["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
  if (next == old) return old;  // no write, no new resourceVersion, no event
  next["metadata"]["resourceVersion"] = NextRv();
  *stored = next;
  Record(ResourceKey(r), ns, WatchEvent::Type::kModified, next, old);
  if (!MetaString(next, "deletionTimestamp").empty() && !HasFinalizers(next)) {
    auto policy = propagation_.find(MetaString(next, "uid"));
    RemoveLocked(ResourceKey(r), ObjectKey(ns, name),
                 policy == propagation_.end() ? Propagation::kBackground : policy->second);
  }
  return next;
}

Status MemoryKubeApi::Delete(const Resource& r, const std::string& ns, const std::string& name,
                             Propagation propagation) {
  const std::string path = ObjectPath(r, ns, name);
  SKRULL_RETURN_IF_ERROR(CheckInjected(Verb::kDelete, r, "DELETE", path));
  std::lock_guard<std::mutex> lock(mu_);
  SKRULL_RETURN_IF_ERROR(FindLocked(r, ns, name, "DELETE", path).status());
  RemoveLocked(ResourceKey(r), ObjectKey(ns, name), propagation);
  return OkStatus();
}

void MemoryKubeApi::RemoveLocked(const std::string& resource, const std::string& key,
                                 Propagation propagation) {
  Objects& objs = objects_[resource];
  auto it = objs.find(key);
  if (it == objs.end()) return;
  json obj = it->second;
  const std::string ns = MetaString(obj, "namespace");
  const std::string uid = MetaString(obj, "uid");
  if (HasFinalizers(obj)) {
    if (!MetaString(obj, "deletionTimestamp").empty()) return;  // already being deleted
    const json old = obj;
    obj["metadata"]["deletionTimestamp"] = Now();
    obj["metadata"]["deletionGracePeriodSeconds"] = 0;
    obj["metadata"]["generation"] = obj["metadata"].value("generation", 0) + 1;
    obj["metadata"]["resourceVersion"] = NextRv();
    it->second = obj;
    propagation_[uid] = propagation;
    Record(resource, ns, WatchEvent::Type::kModified, obj, old);
    return;
  }
  objs.erase(it);
  propagation_.erase(uid);
  obj["metadata"]["resourceVersion"] = NextRv();
  Record(resource, ns, WatchEvent::Type::kDeleted, obj, nullptr);
  CollectGarbageLocked(ns, uid, propagation);
}

void MemoryKubeApi::CollectGarbageLocked(const std::string& ns, const std::string& owner_uid,
                                         Propagation propagation) {
  if (owner_uid.empty()) return;
  std::vector<std::pair<std::string, std::string>> dependents;  // (resource, key)
  const std::string ns_prefix = ns + "/";
  for (const auto& [resource, objs] : objects_) {
    for (auto it = objs.lower_bound(ns_prefix);
         it != objs.end() && it->first.compare(0, ns_prefix.size(), ns_prefix) == 0; ++it) {
      if (HasOwnerUid(it->second, owner_uid)) dependents.emplace_back(resource, it->first);
    }
  }
  for (const auto& [resource, key] : dependents) {
    Objects& objs = objects_[resource];
    auto it = objs.find(key);
    if (it == objs.end()) continue;  // removed by an earlier cascade
    json stripped = it->second;
    RemoveOwnerUid(stripped, owner_uid);
    const bool other_owners = stripped["metadata"].contains("ownerReferences");
    if (propagation != Propagation::kOrphan && !other_owners) {
      RemoveLocked(resource, key, Propagation::kBackground);
      continue;
    }
    const json old = it->second;
    stripped["metadata"]["resourceVersion"] = NextRv();
    it->second = stripped;
    Record(resource, ns, WatchEvent::Type::kModified, stripped, old);
  }
}

}  // namespace skrull::kube
