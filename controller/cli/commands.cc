#include "controller/cli/commands.h"

#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "api/job_spec.h"
#include "common/http_server.h"
#include "controller/kube/http_kube_api.h"
#include "controller/operator/controller.h"
#include "controller/operator/leader_election.h"
#include "controller/reconcile/desired.h"
#include "controller/reconcile/names.h"
#include "controller/tuner/exposition_progress.h"
#include "controller/tuner/prometheus_source.h"
#include "controller/tuner/run_dir.h"
#include "controller/tuner/tuner.h"

#ifdef SKRULL_CONTROLLER_HAS_LOCAL_RUNNER
#include "controller/local/trainer_binary.h"
#include "controller/local/tuning_loop.h"
#include "trainer/dist/process_spawner.h"
#endif

namespace skrull::controller::cli {
namespace {

using json = nlohmann::json;

// The Prometheus-backed tuner for Kubernetes jobs (reconciler.h TuneFn).
TuneFn PrometheusTuner(std::shared_ptr<tuner::PrometheusApi> prometheus, std::string window) {
  return [prometheus, window](const api::JobSpec& spec, const json& job,
                              const AttemptEnd& end) -> StatusOr<json> {
    tuner::PrometheusSourceOptions o;
    o.job = spec.name;
    o.window = window;
    o.time_unix_seconds = static_cast<double>(Clock::to_time_t(end.ended));
    o.host_memory_shared = spec.resources.gpus_per_proc == 0;
    o.died_of_memory = end.died_of_memory;
    o.failure = end.failure;
    SKRULL_ASSIGN_OR_RETURN(tuner::TuningInput input, tuner::ReadPrometheus(prometheus.get(), o));
    if (end.bucket_size_tokens > 0) input.bucket_size_tokens = end.bucket_size_tokens;
    SKRULL_ASSIGN_OR_RETURN(tuner::TuningDecision decision, tuner::Tune(input, spec.tuning));
    json verdict = tuner::TuningDecisionToJson(decision);
    verdict["nextBucketSizeTokens"] = decision.recommended_bucket_size_tokens;
    return verdict;
  };
}

// status.progress of a running job from its trainers' gauges.
ProgressFn PrometheusProgress(std::shared_ptr<tuner::PrometheusApi> prometheus) {
  return [prometheus](const api::JobSpec& spec) -> StatusOr<json> {
    const std::string sel = "{job=\"" + spec.name + "\"}";
    json progress = tuner::ProgressSkeleton(spec);
    for (const tuner::ProgressGauge& g : tuner::kProgressGauges) {
      const std::string promql = std::string(g.aggregate) + "(" + g.metric + sel + ")";
      SKRULL_ASSIGN_OR_RETURN(json data, prometheus->Query(promql, 0));
      const json& result = data.value("result", json::array());
      if (result.empty()) continue;  // not scraped yet
      const std::string text = result[0]["value"][1].get<std::string>();
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || !std::isfinite(v)) continue;
      tuner::SetProgressField(g.field, v, &progress);
    }
    return progress;
  };
}

TrainerPodSecurity PodSecurity(const TrainerPodFlags& flags) {
  TrainerPodSecurity security;
  security.ipc_lock = flags.ipc_lock;
  security.shared_memory = flags.shared_memory;
  return security;
}

// How long calls other than watches may still finish after `stop` (the
// lease release, a reconcile's last writes) before they are cancelled;
// with the signal watcher's 100 ms poll, serve exits within 2 s.
constexpr std::chrono::milliseconds kShutdownGrace(500);

// From `stop` on: cancels the API's watches at once and every other call
// (and Prometheus queries, when `prometheus` is set) after kShutdownGrace.
// Destroying it (serve returning) ends its thread.
class CancelOnStop {
 public:
  CancelOnStop(const std::atomic<bool>& stop, kube::HttpKubeApi* api,
               tuner::HttpPrometheusApi* prometheus)
      : thread_([this, &stop, api, prometheus] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!done_ && !stop) cv_.wait_for(lock, std::chrono::milliseconds(20));
          if (done_) return;
          api->CancelWatches();
          if (cv_.wait_for(lock, kShutdownGrace, [this] { return done_; })) return;
          api->CancelAll();
          if (prometheus != nullptr) prometheus->CancelAll();
        }) {}
  ~CancelOnStop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CancelOnStop(const CancelOnStop&) = delete;
  CancelOnStop& operator=(const CancelOnStop&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

int RunRender(const RenderFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<api::JobSpec> spec = api::LoadJobSpecFile(flags.job_file);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return 2;
  }
  JobContext ctx;
  ctx.uid = flags.uid;
  ctx.attempt = flags.attempt;
  ctx.default_trainer_image = flags.trainer_image;
  ctx.pod_security = PodSecurity(flags.trainer_pod);
  StatusOr<DesiredObjects> d = BuildDesired(*spec, ctx);
  if (!d.ok()) {
    err << flags.job_file << ": " << d.status().message() << "\n";
    return 2;
  }
  json items = json::array({d->config_map, d->service});
  for (const json& pod : d->pods) items.push_back(pod);
  out << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump(2) << "\n";
  return 0;
}

int RunTune(const TuneFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<api::JobSpec> spec = api::LoadJobSpecFile(flags.job_file);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return 2;
  }
  StatusOr<tuner::TuningInput> input = tuner::ReadRunDirectoryForJob(flags.run_dir, *spec);
  if (!input.ok()) {
    err << input.status().message() << "\n";
    return 2;
  }
  StatusOr<tuner::TuningDecision> decision = tuner::Tune(*input, spec->tuning);
  if (!decision.ok()) {
    err << decision.status().message() << "\n";
    return 1;
  }
  out << decision->reason << "\n" << tuner::TuningDecisionToJson(*decision).dump(2) << "\n";
  return 0;
}

int RunLocal(const RunFlags& flags, const Environment& env, const std::atomic<int>* interrupt,
             std::ostream& out, std::ostream& err) {
#ifdef SKRULL_CONTROLLER_HAS_LOCAL_RUNNER
  StatusOr<api::JobSpec> spec = api::LoadJobSpecFile(flags.job_file);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return 2;
  }
  const auto path_var = env.vars.find("PATH");
  StatusOr<std::string> trainer =
      local::FindTrainerBinary(flags.trainer, local::SelfExecutableDir(),
                               path_var == env.vars.end() ? "" : path_var->second);
  if (!trainer.ok()) {
    err << "skrull-controller run: " << trainer.status().message() << "\n";
    return 2;
  }
  local::LocalRunnerOptions o;
  o.trainer_binary = *trainer;
  o.env = env.vars;
  o.trainer_args = flags.trainer_args;
  o.interrupt_signal = interrupt;
  dist::PosixProcessSpawner spawner;
  local::LocalRunner runner(o, &spawner);
  local::TuningLoopOptions loop;
  loop.runs = flags.runs;
  StatusOr<local::TuningLoopReport> report = local::RunWithTuning(&runner, *spec, loop);
  if (!report.ok()) {
    err << "skrull-controller run: " << report.status().message() << "\n";
    return 2;
  }
  for (const local::RunRecord& r : report->runs) {
    out << "run " << r.result.run_index << " (" << r.result.run_dir << "): " << r.result.reason
        << "\n";
    if (r.decision) out << "  tuning: " << r.decision->reason << "\n";
    if (!r.tuning_error.empty()) out << "  tuning: " << r.tuning_error << "\n";
  }
  if (!report->history_path.empty()) out << "history: " << report->history_path << "\n";
  return report->ExitCode();
#else
  err << "skrull-controller run: this build has no local runner (it needs the trainer's "
         "launcher: configure with SKRULL_BUILD_TRAINER=ON)\n";
  return 2;
#endif
}

int RunServe(const ServeFlags& flags, const Environment& env, const std::atomic<bool>& stop,
             std::ostream& err) {
  StatusOr<kube::KubeConfig> config = flags.kubeconfig.empty()
                                          ? kube::InClusterConfig(env.in_cluster)
                                          : kube::LoadKubeconfig(flags.kubeconfig, flags.context);
  if (!config.ok()) {
    err << "skrull-controller serve: " << config.status().message() << "\n";
    return 2;
  }
  config->allow_insecure_http = flags.insecure_http;
  StatusOr<std::unique_ptr<kube::HttpKubeApi>> api = kube::HttpKubeApi::Create(*config);
  if (!api.ok()) {
    err << "skrull-controller serve: " << api.status().message() << "\n";
    return 2;
  }
  if (config->server.rfind("http://", 0) == 0) {
    err << "skrull-controller: WARNING: --insecure-http: talking to " << config->server
        << " over plain HTTP; the bearer token and every object cross the network "
           "unencrypted. Use only for a test server on a trusted link.\n";
  }
  ControllerOptions options;
  options.watch_namespace = flags.watch_namespace;
  options.workers = flags.workers;
  options.resync = std::chrono::seconds(flags.resync_seconds);
  options.reconciler.default_trainer_image = flags.trainer_image;
  options.reconciler.trainer_service_account = flags.trainer_service_account;
  options.reconciler.pod_security = PodSecurity(flags.trainer_pod);
  options.reconciler.max_world_size = flags.max_world_size;
  options.reconciler.max_pod_creates_per_pass = flags.pod_create_batch;
  tuner::HttpPrometheusApi* prometheus_api = nullptr;  // owned by the reconciler's functions
  if (!flags.prometheus_url.empty()) {
    StatusOr<std::unique_ptr<tuner::HttpPrometheusApi>> prometheus =
        tuner::HttpPrometheusApi::Create(flags.prometheus_url, std::chrono::seconds(10),
                                         "--prometheus-url");
    if (!prometheus.ok()) {
      err << "skrull-controller serve: " << prometheus.status().message() << "\n";
      return 2;
    }
    prometheus_api = prometheus->get();
    std::shared_ptr<tuner::PrometheusApi> shared = std::move(*prometheus);
    options.reconciler.tune = PrometheusTuner(shared, flags.prometheus_window);
    options.reconciler.progress = PrometheusProgress(shared);
  } else {
    // Without Prometheus, status.progress comes from the rank-0 trainer's
    // own /metrics page, through the DNS name its headless Service gives it.
    options.reconciler.progress = tuner::TrainerEndpointProgress(
        [](const api::JobSpec& spec) {
          return "http://" + PodHostname(spec.name, 0) + "." + ServiceName(spec.name) + "." +
                 spec.namespace_name + ".svc:" + std::to_string(spec.metrics.port) + "/metrics";
        },
        std::chrono::seconds(5));
  }
  // SIGTERM must not wait for a request timeout (30 s) on a server that does
  // not answer: watches end at once, other calls get kShutdownGrace.
  CancelOnStop cancel_on_stop(stop, api->get(), prometheus_api);
  Controller controller(api->get(), options);

  std::unique_ptr<http::HttpServer> server;
  if (flags.metrics_port > 0) {
    http::HttpServerOptions so;
    so.bind_address = flags.metrics_address;
    so.port = flags.metrics_port;
    so.threads = 2;
    StatusOr<std::unique_ptr<http::HttpServer>> started = http::HttpServer::Start(
        so, [&controller](const http::HttpRequest& req, http::HttpResponseWriter& w) {
          if (req.path == "/metrics") {
            w.Send(200, "text/plain; version=0.0.4; charset=utf-8", controller.Metrics());
          } else if (req.path == "/healthz" || req.path == "/readyz") {
            w.Send(200, "text/plain", "ok\n");
          } else {
            w.Send(404, "text/plain", "not found: try /metrics or /healthz\n");
          }
        });
    if (!started.ok()) {
      err << "skrull-controller serve: --metrics-port: " << started.status().message() << "\n";
      return 2;
    }
    server = std::move(*started);
  }
  err << "skrull-controller: serving " << config->source << ", namespace "
      << (flags.watch_namespace.empty() ? std::string("(all)") : flags.watch_namespace)
      << (server ? ", metrics on " + server->address() : std::string()) << "\n";

  if (!flags.leader_elect) {
    controller.SetLeader(true);
    controller.Run(stop);
    return 0;
  }
  LeaseOptions lease;
  lease.ns = !flags.lease_namespace.empty()   ? flags.lease_namespace
             : !env.pod_namespace.empty()     ? env.pod_namespace
             : !flags.watch_namespace.empty() ? flags.watch_namespace
                                              : config->default_namespace;
  lease.name = flags.lease_name;
  lease.identity = UniqueIdentity(env.pod_name);
  LeaderElector elector(api->get(), lease);
  std::atomic<bool> work_stop{false};
  std::thread worker;
  const bool stopped = elector.Run(stop, [&] {
    err << "skrull-controller: leading (lease " << lease.ns << "/" << lease.name << " as "
        << lease.identity << ")\n";
    controller.SetLeader(true);
    worker = std::thread([&] { controller.Run(work_stop); });
  });
  controller.SetLeader(false);
  work_stop = true;
  if (worker.joinable()) worker.join();
  if (!stopped) {
    err << "skrull-controller: lost the lease " << lease.ns << "/" << lease.name
        << "; exiting so a fresh replica can take over\n";
    return 1;
  }
  return 0;
}

}  // namespace skrull::controller::cli
