// Controller: the operator's main loop (docs/kubernetes-api.md: informer pattern,
// simplified). Watchers turn SkrullJob and trainer-pod events into job keys
// on a WorkQueue; workers reconcile one key at a time (Reconciler); failures
// back off per key; a periodic resync re-queues every known job, so a missed
// event or an expiring deadline is never lost (level-triggered).
//
// Watches: list, then watch from the list's resourceVersion with bookmarks;
// a 410 (expired) relists; other errors retry with backoff. The pod watch
// selects app.kubernetes.io/managed-by=skrull-controller and maps a pod to
// its job by the skrull.io/job-name label.
//
// Metrics (Prometheus text, served by main on /metrics):
//   skrull_controller_reconcile_total{result="success"|"error"}
//   skrull_controller_reconcile_duration_seconds (histogram)
//   skrull_controller_jobs{phase}       jobs seen by phase, last reconcile each
//   skrull_controller_queue_depth
//   skrull_controller_is_leader         set by main
//   skrull_controller_watch_restarts_total{resource}
//
// Thread safety: Run starts and joins its own threads; Metrics() and
// ProcessKey are thread-safe.
#ifndef SKRULL_CONTROLLER_OPERATOR_CONTROLLER_H_
#define SKRULL_CONTROLLER_OPERATOR_CONTROLLER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "controller/kube/kube_api.h"
#include "controller/operator/work_queue.h"
#include "controller/reconcile/reconciler.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace skrull::controller {

struct ControllerOptions {
  std::string watch_namespace;  // "" = every namespace
  int workers = 2;
  std::chrono::seconds resync{30};
  std::chrono::seconds watch_timeout{20};  // server-side timeoutSeconds per watch
  ReconcilerOptions reconciler;
};

class Controller {
 public:
  Controller(kube::KubeApi* api, ControllerOptions options);
  ~Controller();

  // Runs watchers, resync and workers until `stop` is set, then joins them
  // all: returning takes up to watch_timeout (a watch ends when the server
  // closes it or an event arrives).
  void Run(const std::atomic<bool>& stop);

  // Reconciles `key` ("namespace/name") once, with metrics and backoff
  // bookkeeping; what workers do. For tests and `--once` runs.
  void ProcessKey(const std::string& key);

  WorkQueue& queue() { return queue_; }
  void SetLeader(bool leader);
  // The exposition of the metrics above (text format 0.0.4).
  std::string Metrics() const;

 private:
  void WatchLoop(const kube::Resource& resource, const std::string& selector, bool pods,
                 const std::atomic<bool>& stop);
  void Enqueue(const kube::json& object, bool pod);

  kube::KubeApi* api_;
  ControllerOptions options_;
  Reconciler reconciler_;
  WorkQueue queue_;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* reconcile_ok_;
  prometheus::Counter* reconcile_error_;
  prometheus::Histogram* reconcile_seconds_;
  prometheus::Family<prometheus::Gauge>* jobs_by_phase_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* is_leader_;
  prometheus::Family<prometheus::Counter>* watch_restarts_;

  mutable std::mutex mu_;
  std::map<std::string, std::string> phase_by_key_;  // for skrull_controller_jobs
};

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_OPERATOR_CONTROLLER_H_
