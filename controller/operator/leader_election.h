// LeaderElector: one active controller among replicas, through a
// coordination.k8s.io/v1 Lease (docs/kubernetes-api.md, "Leader election"). Optimistic concurrency
// on the Lease's resourceVersion decides races: only one PUT wins.
//
// Expiry is judged on this process's own clock from the moment it last saw
// the Lease change (as client-go does), never from the holder's renewTime,
// so clock skew between nodes cannot hand leadership to two replicas.
// A leader that cannot renew within `renew_deadline` must stop reconciling
// at once (Run returns; main exits).
//
// Thread-compatible: one thread calls TryAcquireOrRenew / Run.
#ifndef SKRULL_CONTROLLER_OPERATOR_LEADER_ELECTION_H_
#define SKRULL_CONTROLLER_OPERATOR_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "common/status.h"
#include "controller/kube/kube_api.h"

namespace skrull::controller {

struct LeaseOptions {
  std::string ns;  // the controller's own namespace
  std::string name = "skrull-controller";
  std::string identity;  // unique per replica: UniqueIdentity(pod name)
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
};

class LeaderElector {
 public:
  using SteadyClock = std::chrono::steady_clock;
  LeaderElector(
      kube::KubeApi* api, LeaseOptions options,
      std::function<SteadyClock::time_point()> steady_now = [] { return SteadyClock::now(); },
      std::function<std::chrono::system_clock::time_point()> wall_now =
          [] { return std::chrono::system_clock::now(); });

  // One attempt: true when this replica holds the Lease afterwards (created,
  // taken over after expiry, or renewed). API errors are returned; a lost
  // race (409) is false, not an error.
  StatusOr<bool> TryAcquireOrRenew();

  // Blocks: retries every retry_period until leader, calls on_leading (which
  // must return promptly: start workers), renews every retry_period, and
  // returns when `stop` is set (then releases the Lease) or when renewing
  // failed for renew_deadline (leadership lost: the caller must stop work).
  // Returns true when it stopped because of `stop`.
  bool Run(const std::atomic<bool>& stop, const std::function<void()>& on_leading);

  bool leading() const { return leading_; }

 private:
  Status Release();

  kube::KubeApi* api_;
  LeaseOptions options_;
  std::function<SteadyClock::time_point()> steady_now_;
  std::function<std::chrono::system_clock::time_point()> wall_now_;
  // What we last saw of the Lease and when (our clock).
  std::string observed_holder_, observed_renew_;
  SteadyClock::time_point observed_at_{};
  bool leading_ = false;
};

// `base` (a pod or host name; "skrull-controller" when empty) + "_" + 16
// random hex digits: a holder identity unique to this process, so two
// replicas that share a host name, or run without POD_NAME, never both
// believe they hold the Lease. client-go's leader election does the same
// (hostname + "_" + a UUID).
std::string UniqueIdentity(const std::string& base);

// "2026-11-23T10:00:01.000000Z": a Kubernetes MicroTime.
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace skrull::controller

#endif  // SKRULL_CONTROLLER_OPERATOR_LEADER_ELECTION_H_
