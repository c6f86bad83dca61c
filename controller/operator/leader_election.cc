#include "controller/operator/leader_election.h"

#include <cstdio>
#include <random>
#include <thread>

#include "controller/reconcile/decide.h"

namespace skrull::controller {

std::string UniqueIdentity(const std::string& base) {
  std::random_device device;
  std::mt19937_64 rng((uint64_t{device()} << 32) ^ device());
  char suffix[17];
  std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(rng()));
  return (base.empty() ? std::string("skrull-controller") : base) + "_" + suffix;
}

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  std::string s = FormatTime(t);  // ...:SSZ
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()) %
                  std::chrono::seconds(1);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(us.count()));
  s.insert(s.size() - 1, frac);
  return s;
}

LeaderElector::LeaderElector(kube::KubeApi* api, LeaseOptions options,
                             std::function<SteadyClock::time_point()> steady_now,
                             std::function<std::chrono::system_clock::time_point()> wall_now)
    : api_(api),
      options_(std::move(options)),
      steady_now_(std::move(steady_now)),
      wall_now_(std::move(wall_now)) {}

StatusOr<bool> LeaderElector::TryAcquireOrRenew() {
  const kube::Resource leases = kube::LeasesResource();
  const std::string now = FormatMicroTime(wall_now_());
  const int duration = static_cast<int>(options_.lease_duration.count());
  StatusOr<kube::json> lease = api_->Get(leases, options_.ns, options_.name);
  if (!lease.ok()) {
    if (lease.status().code() != StatusCode::kNotFound) return lease.status();
    kube::json fresh = {{"apiVersion", "coordination.k8s.io/v1"},
                        {"kind", "Lease"},
                        {"metadata", {{"name", options_.name}, {"namespace", options_.ns}}},
                        {"spec",
                         {{"holderIdentity", options_.identity},
                          {"leaseDurationSeconds", duration},
                          {"acquireTime", now},
                          {"renewTime", now},
                          {"leaseTransitions", 0}}}};
    StatusOr<kube::json> created = api_->Create(leases, options_.ns, fresh);
    if (!created.ok()) {
      if (kube::IsAlreadyExists(created.status())) return leading_ = false;
      return created.status();
    }
    observed_holder_ = options_.identity;
    observed_renew_ = now;
    observed_at_ = steady_now_();
    return leading_ = true;
  }

  kube::json spec = lease->value("spec", kube::json::object());
  const std::string holder = spec.value("holderIdentity", "");
  const std::string renew = spec.value("renewTime", "");
  if (holder != observed_holder_ || renew != observed_renew_) {
    observed_holder_ = holder;
    observed_renew_ = renew;
    observed_at_ = steady_now_();
  }
  const int held_for = spec.value("leaseDurationSeconds", duration);
  const bool expired = steady_now_() >= observed_at_ + std::chrono::seconds(held_for);
  if (!holder.empty() && holder != options_.identity && !expired) return leading_ = false;

  if (holder != options_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = duration;
  spec["renewTime"] = now;
  (*lease)["spec"] = spec;
  const std::string name = options_.name;
  StatusOr<kube::json> replaced = api_->Replace(leases, options_.ns, name, *lease, false);
  if (!replaced.ok()) {
    if (kube::IsConflict(replaced.status())) return leading_ = false;  // someone else won
    return replaced.status();
  }
  observed_holder_ = options_.identity;
  observed_renew_ = now;
  observed_at_ = steady_now_();
  return leading_ = true;
}

Status LeaderElector::Release() {
  StatusOr<kube::json> lease = api_->Get(kube::LeasesResource(), options_.ns, options_.name);
  if (!lease.ok()) return lease.status();
  if ((*lease)["spec"].value("holderIdentity", "") != options_.identity) return OkStatus();
  (*lease)["spec"]["holderIdentity"] = "";
  (*lease)["spec"]["leaseDurationSeconds"] = 1;
  return api_->Replace(kube::LeasesResource(), options_.ns, options_.name, *lease, false).status();
}

bool LeaderElector::Run(const std::atomic<bool>& stop, const std::function<void()>& on_leading) {
  auto sleep = [&] {
    const auto until = steady_now_() + options_.retry_period;
    while (!stop && steady_now_() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  while (!stop) {
    StatusOr<bool> got = TryAcquireOrRenew();
    if (got.ok() && *got) break;
    sleep();
  }
  if (stop) return true;
  on_leading();
  SteadyClock::time_point last_renew = steady_now_();
  while (!stop) {
    sleep();
    if (stop) break;
    StatusOr<bool> renewed = TryAcquireOrRenew();
    if (renewed.ok() && *renewed) {
      last_renew = steady_now_();
    } else if (steady_now_() - last_renew >= options_.renew_deadline) {
      leading_ = false;
      return false;
    }
  }
  (void)Release();  // best effort: lets a standby take over without waiting
  leading_ = false;
  return true;
}

}  // namespace skrull::controller
