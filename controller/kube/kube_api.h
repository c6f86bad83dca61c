// KubeApi: the slice of the Kubernetes REST API the controller uses, as raw
// JSON objects (nlohmann::json), behind an interface so the reconciler runs
// the same against a real API server (HttpKubeApi, cpprestsdk) and an
// in-memory one (MemoryKubeApi, for tests and `--dry-run`).
//
// Paths follow docs/kubernetes-api.md ("REST paths and verbs"): a Resource names the API prefix and
// plural, e.g. {"/api/v1", "pods"} or {"/apis/skrull.io/v1alpha1", "skrulljobs"}; every call here
// is namespaced, except that List and Watch take ns "" to mean all namespaces (e.g.
// /apis/skrull.io/v1alpha1/skrulljobs).
//
// Errors map HTTP statuses to Status codes; the message reads
// "<METHOD> <path>: HTTP <code> <Reason>: <server's Status.message>", e.g.
// "PUT /api/v1/namespaces/a/pods/p: HTTP 409 Conflict: Operation cannot be
// fulfilled on pods \"p\": the object has been modified; ...":
//   404 -> kNotFound          409 -> kFailedPrecondition (conflict: stale
//   410 -> kUnavailable           resourceVersion or AlreadyExists; the
//        (watch: "expired",       message says which: "Conflict" or
//         relist)                 "AlreadyExists")
//   400/422 (other 4xx) -> kInvalidArgument   401/403 -> kFailedPrecondition
//   429, 5xx, timeouts, connection failures -> kUnavailable
// Use IsConflict / IsAlreadyExists / IsExpired below rather than parsing.
//
// Thread safety: implementations are thread-safe; Watch blocks its caller.
#ifndef SKRULL_CONTROLLER_KUBE_KUBE_API_H_
#define SKRULL_CONTROLLER_KUBE_KUBE_API_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace skrull::kube {

using json = nlohmann::json;

struct Resource {
  std::string prefix;       // "/api/v1" or "/apis/<group>/<version>"
  std::string plural;       // "pods", "services", "configmaps", "events", "skrulljobs", "leases"
  std::string kind;         // "Pod", ...: what Create fills in when the object has no kind
  std::string api_version;  // "v1", "skrull.io/v1alpha1", ...
};

// The resources the controller touches.
Resource PodsResource();
Resource ServicesResource();
Resource ConfigMapsResource();
Resource EventsResource();
Resource LeasesResource();      // coordination.k8s.io/v1
Resource SkrullJobsResource();  // skrull.io/v1alpha1, plural skrulljobs

struct ListResult {
  std::vector<json> items;
  std::string resource_version;  // the list's metadata.resourceVersion (for Watch)
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  json object;  // for kBookmark only metadata.resourceVersion is meaningful
};

// "ADDED", "MODIFIED", "DELETED", "BOOKMARK": the names on the wire.
const char* WatchEventTypeName(WatchEvent::Type type);

struct WatchOptions {
  std::string label_selector;  // "" = all
  // From ListResult or the last event (BOOKMARKs included). "" (or "0"):
  // as the API server does, first a synthetic kAdded for every object that
  // exists now, then the changes after it.
  std::string resource_version;
  std::chrono::seconds timeout{300};  // server-side timeoutSeconds; <= 0 means 300
};

// PATCH flavours (docs/kubernetes-api.md); custom resources take merge and JSON patch.
enum class PatchType { kMerge, kJson };

enum class Propagation { kBackground, kForeground, kOrphan };

class KubeApi {
 public:
  virtual ~KubeApi() = default;

  virtual StatusOr<json> Get(const Resource& r, const std::string& ns, const std::string& name) = 0;
  // All pages (limit/continue handled inside).
  virtual StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                                    const std::string& label_selector) = 0;
  // List keeping only `project(item)` of each item. HttpKubeApi projects
  // each page as it arrives, so at most one page of whole objects is in
  // memory (a controller listing thousands of pods holds what it reads of
  // them, not the API server's objects). The default lists, then projects.
  virtual StatusOr<ListResult> ListProjected(const Resource& r, const std::string& ns,
                                             const std::string& label_selector,
                                             const std::function<json(const json&)>& project);
  // POST; returns the object as stored (uid, resourceVersion, ...).
  virtual StatusOr<json> Create(const Resource& r, const std::string& ns, const json& object) = 0;
  // PUT of the whole object; object.metadata.resourceVersion must be the one
  // read (else a conflict; without one the write is unconditional, as the
  // API server allows). `status_subresource` PUTs to .../status.
  virtual StatusOr<json> Replace(const Resource& r, const std::string& ns, const std::string& name,
                                 const json& object, bool status_subresource) = 0;
  // A metadata.resourceVersion in the patch is a precondition, as in Replace.
  virtual StatusOr<json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                               PatchType type, const json& patch, bool status_subresource) = 0;
  // NotFound when already gone.
  virtual Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                        Propagation propagation) = 0;
  // Streams events to `on_event` until the server ends the watch (OK), the
  // callback returns false (OK), or an error (kUnavailable; IsExpired when
  // the resourceVersion is too old: relist). Blocks the caller; `on_event`
  // runs on the caller's thread and may call this KubeApi. A kDeleted
  // event is also sent when an object stops matching the label selector,
  // and a kAdded when it starts to, as the API server's watch cache does.
  virtual Status Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                       const std::function<bool(const WatchEvent&)>& on_event) = 0;
};

bool IsConflict(const Status& s);       // 409 Conflict (stale resourceVersion)
bool IsAlreadyExists(const Status& s);  // 409 AlreadyExists
bool IsExpired(const Status& s);        // 410 Gone / watch ERROR 410

// Status for an HTTP answer: `verb` and `path` name the call, `code` the
// HTTP status, `body` the response (a Kubernetes Status object when JSON).
// OK for 2xx. Shared by every implementation so messages read the same.
Status HttpStatusToStatus(const std::string& verb, const std::string& path, int code,
                          const std::string& body);

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_KUBE_API_H_
