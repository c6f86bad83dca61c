// MemoryKubeApi: an in-memory Kubernetes API server behind KubeApi, for
// tests, for `--dry-run`, and as the store behind FakeApiServer.
//
// What it implements, as the API server does (docs/kubernetes-api.md):
//  * a global resourceVersion counter (strings "2", "3", ...; an empty store
//    is at "1"; compare them only for equality), uid, creationTimestamp (from the injected clock),
//    metadata.generation = 1 on create, +1 when anything outside metadata
//    and status changes; generateName;
//  * the /status subresource: for resources that have one (all but
//    options.plurals_without_status), Create and the main Replace/Patch
//    ignore .status, the status Replace/Patch ignore all but .status; a pod
//    is created with status.phase "Pending";
//  * optimistic concurrency: Replace/Patch carrying a stale
//    metadata.resourceVersion -> 409 Conflict; no resourceVersion = an
//    unconditional write; Create of an existing name -> 409 AlreadyExists;
//    Create with a resourceVersion -> 400; a write that changes nothing
//    keeps the resourceVersion and sends no event;
//  * merge patch (RFC 7386) and JSON patch (RFC 6902; a failed "test" or a
//    missing path -> 422);
//  * label selectors (label_selector.h); List with limit/continue
//    (ListPage); pages after the first read the current state, not a
//    snapshot, and a continue token older than the history -> 410;
//  * Watch from a resourceVersion kept in a bounded history
//    (options.history_limit events; older -> 410 Expired, also in the
//    middle of a watch that fell that far behind), BOOKMARK events every
//    options.bookmark_interval of quiet and just before the server-side
//    timeout ends the watch;
//  * finalizers: Delete of an object with metadata.finalizers only sets
//    deletionTimestamp; the write that empties the list deletes it;
//  * garbage collection on delete, at once rather than in the background:
//    kBackground deletes (recursively) every object in the namespace whose
//    ownerReferences name the deleted uid and nothing else, and strips the
//    dangling reference from those with other owners; kForeground behaves
//    as kBackground (the owner is gone when Delete returns, not after its
//    dependents); kOrphan strips the references and keeps the dependents.
// Not implemented: field selectors, server-side apply, admission,
// defaulting beyond the above, graceful pod deletion, cross-namespace GC.
//
// Thread safety: every method is thread-safe. Watch blocks its caller and
// calls `on_event` without holding the lock, so callbacks may call back in.
#ifndef SKRULL_CONTROLLER_KUBE_MEMORY_KUBE_API_H_
#define SKRULL_CONTROLLER_KUBE_MEMORY_KUBE_API_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controller/kube/kube_api.h"

namespace skrull::kube {

struct MemoryKubeApiOptions {
  // "Now" as RFC 3339 for creationTimestamp / deletionTimestamp. Default
  // (null): the system clock in UTC, whole seconds, "2025-01-02T03:04:05Z".
  std::function<std::string()> now_rfc3339;
  // Change events kept for Watch (and continue tokens). Watching from an
  // older resourceVersion is 410 Expired. The API server keeps ~5 minutes.
  size_t history_limit = 1000;
  // Quiet time between BOOKMARK events on a watch.
  std::chrono::milliseconds bookmark_interval{1000};
  // Plurals without a /status subresource: their main writes keep .status,
  // and /status calls are 404.
  std::set<std::string> plurals_without_status = {"configmaps", "secrets",         "events",
                                                  "leases",     "serviceaccounts", "endpoints"};
};

// The calls FailNext can fail.
enum class Verb { kGet, kList, kCreate, kReplace, kPatch, kDelete, kWatch };

struct ListPageResult {
  std::vector<json> items;
  std::string resource_version;  // the list's; of the first page for later pages
  std::string continue_token;    // "" on the last page
};

class MemoryKubeApi : public KubeApi {
 public:
  explicit MemoryKubeApi(MemoryKubeApiOptions options = {});
  ~MemoryKubeApi() override;
  MemoryKubeApi(const MemoryKubeApi&) = delete;
  MemoryKubeApi& operator=(const MemoryKubeApi&) = delete;

  StatusOr<json> Get(const Resource& r, const std::string& ns, const std::string& name) override;
  StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                            const std::string& label_selector) override;
  StatusOr<json> Create(const Resource& r, const std::string& ns, const json& object) override;
  StatusOr<json> Replace(const Resource& r, const std::string& ns, const std::string& name,
                         const json& object, bool status_subresource) override;
  StatusOr<json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                       PatchType type, const json& patch, bool status_subresource) override;
  Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                Propagation propagation) override;
  Status Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
               const std::function<bool(const WatchEvent&)>& on_event) override;

  // One page of a list: up to `limit` objects (0 = all) in namespace/name
  // order, after the position in `continue_token` (from the previous page;
  // "" = from the start). 400 for a malformed token, 410 for an old one.
  StatusOr<ListPageResult> ListPage(const Resource& r, const std::string& ns,
                                    const std::string& label_selector, int64_t limit,
                                    const std::string& continue_token);

  // --- Test hooks ---

  // The next `count` calls of `verb` on `plural` ("" = any) fail with
  // `http_code` before doing anything, as the API server would answer
  // (e.g. 500; 409 reads as IsConflict; 410 as IsExpired).
  void FailNext(Verb verb, int count, int http_code, const std::string& plural = "");
  // Ends every watch in progress with Unavailable, as a broken connection
  // would (not IsExpired); later watches work. Returns how many it ended.
  int DropWatches();
  // Ends every watch in progress and makes later Watch calls fail at once
  // (Unavailable): for an owner that is shutting down (FakeApiServer).
  void StopWatches();
  // Forgets the history up to now (etcd compaction): a watch or continue
  // token from an older resourceVersion gets 410 Expired.
  void CompactHistory();
  // The current global resourceVersion.
  std::string resource_version() const;

 private:
  struct Event {
    int64_t rv = 0;
    std::string resource;  // ResourceKey
    std::string ns;
    WatchEvent::Type type = WatchEvent::Type::kAdded;
    json object;
    json previous;  // kModified: the object before, for label-selector transitions
  };
  struct Injected {
    Verb verb;
    std::string plural;
    int count;
    int http_code;
  };
  using Objects = std::map<std::string, json>;  // "<ns>/<name>" -> object

  Status CheckInjected(Verb verb, const Resource& r, const std::string& method,
                       const std::string& path);
  bool HasStatus(const Resource& r) const;
  std::string Now() const;
  // REQUIRES: mu_ held.
  StatusOr<json*> FindLocked(const Resource& r, const std::string& ns, const std::string& name,
                             const std::string& method, const std::string& path);
  std::string NextRv();
  void Record(const std::string& resource, const std::string& ns, WatchEvent::Type type,
              const json& object, const json& previous);
  StatusOr<json> UpdateLocked(const Resource& r, const std::string& ns, const std::string& name,
                              json body, bool status_subresource, const std::string& method,
                              const std::string& path);
  void RemoveLocked(const std::string& resource, const std::string& key, Propagation propagation);
  void CollectGarbageLocked(const std::string& ns, const std::string& owner_uid,
                            Propagation propagation);

  const MemoryKubeApiOptions options_;
  const std::string uid_prefix_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a new event, a drop, or StopWatches
  int64_t rv_ = 1;                   // never "0", which Watch reads as "from now"
  int64_t uid_counter_ = 0;
  std::map<std::string, Objects> objects_;  // ResourceKey -> objects
  std::deque<Event> history_;
  int64_t compacted_rv_ = 0;                        // events up to this are gone
  std::map<std::string, Propagation> propagation_;  // uid -> policy of a pending delete
  std::vector<Injected> injected_;
  uint64_t drop_generation_ = 0;
  int active_watches_ = 0;
  bool watches_stopped_ = false;
};

}  // namespace skrull::kube

#endif  // SKRULL_CONTROLLER_KUBE_MEMORY_KUBE_API_H_
