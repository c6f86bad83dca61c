// Command line of `skrull-controller`, parsed into plain structs (pure; no
// I/O, no environment: main reads those and passes them in).
//
//   skrull-controller run JOB.yaml [--runs N] [--trainer PATH] [--trainer-arg ARG]...
//       Runs the job on this machine as processes (the embedded default for
//       one machine); with spec.tuning.enabled and --runs N > 1 each run
//       starts with the BucketSize the tuner drew from the previous one.
//   skrull-controller tune JOB.yaml --run DIR
//       Prints the tuner's verdict on a finished run's directory.
//   skrull-controller render JOB.yaml [--attempt N] [--uid UID] [--trainer-image IMG]
//       [--trainer-ipc-lock] [--trainer-shared-memory]
//       Prints the Kubernetes objects the controller would create (a v1 List).
//   skrull-controller serve [--kubeconfig FILE] [--context NAME] [--namespace NS]
//       [--insecure-http] [--metrics-port 8080] [--metrics-address 0.0.0.0]
//       [--leader-elect] [--lease-namespace NS] [--lease-name NAME]
//       [--trainer-image IMG] [--trainer-service-account SA]
//       [--trainer-ipc-lock] [--trainer-shared-memory] [--resync-seconds 30]
//       [--workers 2] [--max-world-size 65536] [--pod-create-batch 64]
//       [--prometheus-url URL] [--prometheus-window 1h]
//       The Kubernetes operator: in-cluster credentials unless --kubeconfig.
//
// Parsed with CLI11: flags take their value as the next argument or after
// '='; `--trainer-arg` takes the next argument verbatim, even one starting
// with "--".
#ifndef SKRULL_CONTROLLER_CLI_FLAGS_H_
#define SKRULL_CONTROLLER_CLI_FLAGS_H_

#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::controller::cli {

struct RunFlags {
  std::string job_file;
  int runs = 1;
  std::string trainer = "skrull-trainer";  // path, or a name on PATH
  std::vector<std::string> trainer_args;
};

struct TuneFlags {
  std::string job_file;
  std::string run_dir;
};

// What trainer pods may do beyond the restricted default (desired.h
// TrainerPodSecurity; docs/deploy.md "Trainer pod security").
struct TrainerPodFlags {
  bool ipc_lock = false;       // --trainer-ipc-lock: add the IPC_LOCK capability
  bool shared_memory = false;  // --trainer-shared-memory: /dev/shm as a memory emptyDir
};

struct RenderFlags {
  std::string job_file;
  int attempt = 0;
  std::string uid = "00000000-0000-0000-0000-000000000000";
  std::string trainer_image;
  TrainerPodFlags trainer_pod;
};

struct ServeFlags {
  std::string kubeconfig;  // "" = in-cluster
  std::string context;
  std::string watch_namespace;  // "" = every namespace
  // Accept an http:// API server from the kubeconfig (sends the bearer
  // token in clear; warned about once at startup).
  bool insecure_http = false;
  int metrics_port = 8080;  // 0 = do not serve
  std::string metrics_address = "0.0.0.0";
  bool leader_elect = false;
  std::string lease_namespace;  // "" = $POD_NAMESPACE, else the watched namespace
  std::string lease_name = "skrull-controller";
  std::string trainer_image;
  std::string trainer_service_account;
  TrainerPodFlags trainer_pod;
  int resync_seconds = 30;
  int workers = 2;
  // Jobs of more ranks than this are Failed (TooLarge) before any pod
  // exists; an administrator's bound on what one job may cost the cluster
  // and this controller. The CRD's own bound is api::kMaxWorldSize.
  int max_world_size = api::kMaxWorldSize;
  int pod_create_batch = 64;   // pods created per reconcile pass at most
  std::string prometheus_url;  // "" = no tuning from metrics on Kubernetes
  std::string prometheus_window = "1h";
};

enum class Command { kHelp, kRun, kTune, kRender, kServe };

struct Invocation {
  Command command = Command::kHelp;
  std::string help_text;
  RunFlags run;
  TuneFlags tune;
  RenderFlags render;
  ServeFlags serve;
};

// `args` without the program name. InvalidArgument naming the flag and the
// fix (and pointing at --help) for the first problem found; `--help`, `-h`
// or the command `help` anywhere gives kHelp with the usage text.
StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args);

std::string Usage();

}  // namespace skrull::controller::cli

#endif  // SKRULL_CONTROLLER_CLI_FLAGS_H_
