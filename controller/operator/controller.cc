#include "controller/operator/controller.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <iostream>
#include <thread>
#include <vector>

#include "controller/reconcile/job_status.h"
#include "controller/reconcile/names.h"

namespace skrull::controller {
namespace {

constexpr const char* kPhases[] = {kPhasePending,   kPhaseRunning, kPhaseRestarting,
                                   kPhaseSucceeded, kPhaseFailed,  kPhaseSuspended};

std::string KeyOf(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// The fields of a listed object Enqueue reads.
kube::json KeyFields(const kube::json& object) {
  const kube::json meta = object.value("metadata", kube::json::object());
  kube::json labels = kube::json::object();
  const kube::json all = meta.value("labels", kube::json::object());
  if (all.contains(kLabelJobName)) labels[kLabelJobName] = all[kLabelJobName];
  return {{"metadata",
           {{"namespace", meta.value("namespace", "")},
            {"name", meta.value("name", "")},
            {"labels", labels}}}};
}

void SleepUnless(const std::atomic<bool>& stop, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

Controller::Controller(kube::KubeApi* api, ControllerOptions options)
    : api_(api),
      options_(std::move(options)),
      reconciler_(api, options_.reconciler),
      registry_(std::make_shared<prometheus::Registry>()) {
  auto& reconciles = prometheus::BuildCounter()
                         .Name("skrull_controller_reconcile_total")
                         .Help("Reconcile passes of SkrullJobs by result.")
                         .Register(*registry_);
  reconcile_ok_ = &reconciles.Add({{"result", "success"}});
  reconcile_error_ = &reconciles.Add({{"result", "error"}});
  reconcile_seconds_ = &prometheus::BuildHistogram()
                            .Name("skrull_controller_reconcile_duration_seconds")
                            .Help("Wall time of one reconcile pass.")
                            .Register(*registry_)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01,
                                                                             0.05, 0.1, 0.5, 1, 5});
  jobs_by_phase_ = &prometheus::BuildGauge()
                        .Name("skrull_controller_jobs")
                        .Help("SkrullJobs by status.phase at their last reconcile.")
                        .Register(*registry_);
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("skrull_controller_queue_depth")
                      .Help("Job keys waiting for a worker.")
                      .Register(*registry_)
                      .Add({});
  is_leader_ = &prometheus::BuildGauge()
                    .Name("skrull_controller_is_leader")
                    .Help("1 when this replica holds the leader Lease (or runs alone).")
                    .Register(*registry_)
                    .Add({});
  watch_restarts_ = &prometheus::BuildCounter()
                         .Name("skrull_controller_watch_restarts_total")
                         .Help("Watches restarted after an error or an expired resourceVersion.")
                         .Register(*registry_);
  for (const char* phase : kPhases) jobs_by_phase_->Add({{"phase", phase}});
}

Controller::~Controller() = default;

void Controller::SetLeader(bool leader) { is_leader_->Set(leader ? 1 : 0); }

std::string Controller::Metrics() const {
  queue_depth_->Set(static_cast<double>(queue_.Length()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, int> counts;
    for (const auto& [key, phase] : phase_by_key_) ++counts[phase];
    for (const char* phase : kPhases) jobs_by_phase_->Add({{"phase", phase}}).Set(counts[phase]);
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

void Controller::Enqueue(const kube::json& object, bool pod) {
  const kube::json meta = object.value("metadata", kube::json::object());
  const std::string ns = meta.value("namespace", "");
  std::string name = meta.value("name", "");
  if (pod) name = meta.value("labels", kube::json::object()).value(kLabelJobName, "");
  if (ns.empty() || name.empty()) return;
  queue_.Add(KeyOf(ns, name));
}

void Controller::WatchLoop(const kube::Resource& resource, const std::string& selector, bool pods,
                           const std::atomic<bool>& stop) {
  auto& restarts = watch_restarts_->Add({{"resource", resource.plural}});
  std::chrono::milliseconds backoff(500);
  auto back_off = [&] {
    SleepUnless(stop, backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
  };
  while (!stop) {
    // Only what Enqueue reads: a relist of thousands of pods holds their keys.
    StatusOr<kube::ListResult> list =
        api_->ListProjected(resource, options_.watch_namespace, selector, KeyFields);
    if (!list.ok()) {
      std::cerr << "skrull-controller: list " << resource.plural << ": " << list.status() << "\n";
      restarts.Increment();
      back_off();
      continue;
    }
    for (const kube::json& item : list->items) Enqueue(item, pods);
    std::string rv = list->resource_version;
    while (!stop) {
      kube::WatchOptions w;
      w.label_selector = selector;
      w.resource_version = rv;
      w.timeout = options_.watch_timeout;
      Status s = api_->Watch(resource, options_.watch_namespace, w, [&](const kube::WatchEvent& e) {
        const std::string erv =
            e.object.value("metadata", kube::json::object()).value("resourceVersion", "");
        if (!erv.empty()) rv = erv;
        if (e.type != kube::WatchEvent::Type::kBookmark) {
          Enqueue(e.object, pods);
        }
        return !stop.load();
      });
      if (s.ok()) {
        backoff = std::chrono::milliseconds(500);
        continue;  // the server ended the watch: resume from rv
      }
      restarts.Increment();
      if (!kube::IsExpired(s)) {
        std::cerr << "skrull-controller: watch " << resource.plural << ": " << s << "\n";
        back_off();
      }
      break;  // relist
    }
  }
}

void Controller::ProcessKey(const std::string& key) {
  const size_t slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<ReconcileResult> r = reconciler_.ReconcileJob(ns, name);
  reconcile_seconds_->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!r.ok()) {
    reconcile_error_->Increment();
    const auto delay = queue_.Retry(key);
    std::cerr << "skrull-controller: reconcile " << key << ": " << r.status() << " (retry in "
              << delay.count() / 1000.0 << " s)\n";
    return;
  }
  reconcile_ok_->Increment();
  queue_.Forget(key);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (r->found) {
      phase_by_key_[key] = r->phase;
    } else {
      phase_by_key_.erase(key);
    }
  }
  if (r->requeue_after.count() > 0) queue_.AddAfter(key, r->requeue_after);
}

void Controller::Run(const std::atomic<bool>& stop) {
  std::vector<std::thread> threads;
  const std::string pod_selector = std::string(kLabelManagedBy) + "=" + kManagedByValue;
  threads.emplace_back([&] { WatchLoop(kube::SkrullJobsResource(), "", false, stop); });
  threads.emplace_back([&] { WatchLoop(kube::PodsResource(), pod_selector, true, stop); });
  threads.emplace_back([&] {  // resync: every known job again, level-triggered
    while (!stop) {
      SleepUnless(stop, options_.resync);
      std::vector<std::string> keys;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [key, phase] : phase_by_key_) keys.push_back(key);
      }
      for (const std::string& key : keys) queue_.Add(key);
    }
  });
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    threads.emplace_back([&] {
      while (!stop) {
        std::optional<std::string> key = queue_.Get(std::chrono::milliseconds(200));
        if (!key) continue;
        ProcessKey(*key);
        queue_.Done(*key);
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace skrull::controller
