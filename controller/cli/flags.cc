#include "controller/cli/flags.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <sstream>

namespace skrull::controller::cli {
namespace {

void AddTrainerPodFlags(CLI::App* command, TrainerPodFlags* f) {
  command->add_flag("--trainer-ipc-lock", f->ipc_lock,
                    "add the IPC_LOCK capability to trainer containers (NCCL pinned memory "
                    "over InfiniBand/RDMA; docs/deploy.md)");
  command->add_flag("--trainer-shared-memory", f->shared_memory,
                    "mount a memory-backed emptyDir at /dev/shm in trainer pods (NCCL's "
                    "shared-memory transport; counts against the pod's memory)");
}

}  // namespace

std::string Usage() {
  return "usage: skrull-controller <command> ...\n"
         "  run JOB.yaml [--runs N] [--trainer PATH] [--trainer-arg ARG]...\n"
         "      run the job on this machine; with spec.tuning.enabled, --runs N retunes\n"
         "      bucketSize between runs from the measured memory\n"
         "  tune JOB.yaml --run DIR\n"
         "      the tuner's verdict on a finished run's output directory\n"
         "  render JOB.yaml [--attempt N] [--uid UID] [--trainer-image IMAGE]\n"
         "         [--trainer-ipc-lock] [--trainer-shared-memory]\n"
         "      print the Kubernetes objects the controller would create (a v1 List)\n"
         "  serve [--kubeconfig FILE] [--context NAME] [--namespace NS] [--insecure-http]\n"
         "        [--metrics-port 8080] [--metrics-address 0.0.0.0] [--leader-elect]\n"
         "        [--lease-namespace NS] [--lease-name NAME] [--trainer-image IMAGE]\n"
         "        [--trainer-service-account SA] [--trainer-ipc-lock]\n"
         "        [--trainer-shared-memory] [--resync-seconds 30] [--workers 2]\n"
         "        [--prometheus-url URL] [--prometheus-window 1h]\n"
         "      the Kubernetes operator (in-cluster credentials unless --kubeconfig)\n"
         "`skrull-controller <command> --help` describes each flag.\n";
}

StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args) {
  Invocation inv;
  if (args.empty()) return InvalidArgumentError("no command given\n" + Usage());
  if (args[0] == "help") {
    inv.help_text = Usage();
    return inv;
  }

  CLI::App app{"skrull-controller: runs SkrullJobs on this machine or on Kubernetes",
               "skrull-controller"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows each default

  RunFlags& run = inv.run;
  CLI::App* run_cmd = app.add_subcommand("run", "run the job on this machine as processes");
  run_cmd->add_option("job", run.job_file, "the job file (JOB.yaml)")->required();
  run_cmd->add_option("--runs", run.runs, "runs, retuning bucketSize between them")
      ->check(CLI::Range(1, 1000));
  run_cmd->add_option("--trainer", run.trainer, "the trainer binary: a path or a name on PATH");
  run_cmd
      ->add_option("--trainer-arg", run.trainer_args,
                   "one more argument for every trainer process (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  TuneFlags& tune = inv.tune;
  CLI::App* tune_cmd = app.add_subcommand("tune", "the tuner's verdict on a finished run");
  tune_cmd->add_option("job", tune.job_file, "the job file (JOB.yaml)")->required();
  tune_cmd->add_option("--run", tune.run_dir, "the run's output directory")->required();

  RenderFlags& render = inv.render;
  CLI::App* render_cmd =
      app.add_subcommand("render", "print the Kubernetes objects the controller would create");
  render_cmd->add_option("job", render.job_file, "the job file (JOB.yaml)")->required();
  render_cmd->add_option("--attempt", render.attempt, "attempt number (0 = first launch)")
      ->check(CLI::Range(0, 1000000));
  render_cmd->add_option("--uid", render.uid, "the SkrullJob's metadata.uid");
  render_cmd->add_option("--trainer-image", render.trainer_image,
                         "image for jobs that leave spec.image at its default");
  AddTrainerPodFlags(render_cmd, &render.trainer_pod);

  ServeFlags& serve = inv.serve;
  CLI::App* serve_cmd = app.add_subcommand("serve", "the Kubernetes operator");
  serve_cmd->add_option("--kubeconfig", serve.kubeconfig,
                        "kubeconfig file (default: the pod's service account)");
  serve_cmd->add_option("--context", serve.context, "kubeconfig context (default: current)");
  serve_cmd->add_option("--namespace", serve.watch_namespace,
                        "watch this namespace only (default: every namespace)");
  serve_cmd->add_flag("--insecure-http", serve.insecure_http,
                      "accept an http:// API server: sends the bearer token in clear");
  serve_cmd->add_option("--metrics-port", serve.metrics_port, "/metrics and /healthz; 0 = off")
      ->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--metrics-address", serve.metrics_address,
                        "address the metrics port binds");
  serve_cmd->add_flag("--leader-elect", serve.leader_elect, "elect a leader with a Lease");
  serve_cmd->add_option("--lease-namespace", serve.lease_namespace,
                        "the Lease's namespace (default: $POD_NAMESPACE)");
  serve_cmd->add_option("--lease-name", serve.lease_name, "the Lease's name");
  serve_cmd->add_option("--trainer-image", serve.trainer_image,
                        "image for jobs that leave spec.image at its default");
  serve_cmd->add_option("--trainer-service-account", serve.trainer_service_account,
                        "ServiceAccount of trainer pods (default: the namespace's default)");
  AddTrainerPodFlags(serve_cmd, &serve.trainer_pod);
  serve_cmd
      ->add_option("--resync-seconds", serve.resync_seconds, "re-reconcile every job this often")
      ->check(CLI::Range(1, 86400));
  serve_cmd->add_option("--workers", serve.workers, "jobs reconciled at once")
      ->check(CLI::Range(1, 64));
  serve_cmd
      ->add_option("--max-world-size", serve.max_world_size,
                   "fail jobs of more ranks (nodes x procsPerNode) than this")
      ->check(CLI::Range(1, api::kMaxWorldSize));
  serve_cmd
      ->add_option("--pod-create-batch", serve.pod_create_batch,
                   "pods created per reconcile pass at most")
      ->check(CLI::Range(1, 10000));
  serve_cmd->add_option(
      "--prometheus-url", serve.prometheus_url,
      "Prometheus for status.progress and tuning (default: none: no tuning, progress from "
      "the rank-0 trainer's /metrics)");
  serve_cmd->add_option("--prometheus-window", serve.prometheus_window,
                        "range of the tuner's Prometheus queries");

  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    if (app.get_subcommands().empty()) {
      inv.help_text = Usage();
    } else {  // the command's own flags, described
      std::ostringstream out, err;
      app.exit(e, out, err);
      inv.help_text = out.str();
    }
    return inv;
  } catch (const CLI::ParseError& e) {
    const std::string message =
        app.get_subcommands().empty()
            ? "unknown command '" + args[0] + "'; expected run, tune, render or serve"
            : std::string(e.what());
    return InvalidArgumentError(message + "\nsee skrull-controller --help");
  }
  const std::string& name = app.get_subcommands().front()->get_name();
  inv.command = name == "run"      ? Command::kRun
                : name == "tune"   ? Command::kTune
                : name == "render" ? Command::kRender
                                   : Command::kServe;
  return inv;
}

}  // namespace skrull::controller::cli
