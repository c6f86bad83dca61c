#include "trainer/dist/trainer_main.h"

#include <unistd.h>

#include <climits>
#include <iostream>
#include <string>
#include <vector>

#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/profile.h"
#include "trainer/train/collectives.h"
#include "trainer/train/trainer.h"
#include "trainer/train/trainer_cli.h"

namespace skrull::dist {
namespace {

int Fail(const Status& status) {
  std::cerr << "skrull-trainer: " << status.message() << std::endl;
  return train::ExitCodeFor(status);
}

std::string SelfExecutable(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return argv0;
}

// Removes `--name` (a switch) from args; true when it was there.
bool TakeSwitch(std::vector<std::string>* args, const std::string& name) {
  bool found = false;
  std::vector<std::string> rest;
  for (auto& a : *args) {
    if (a == name) {
      found = true;
    } else {
      rest.push_back(a);
    }
  }
  *args = std::move(rest);
  return found;
}

// Removes `--name VALUE` / `--name=VALUE`; InvalidArgument without a value.
StatusOr<std::string> TakeValue(std::vector<std::string>* args, const std::string& name) {
  std::string value;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == name) {
      if (i + 1 >= args->size()) return InvalidArgumentError(name + ": missing value");
      value = (*args)[++i];
    } else if (a.rfind(name + "=", 0) == 0) {
      value = a.substr(name.size() + 1);
    } else {
      rest.push_back(a);
    }
  }
  *args = std::move(rest);
  return value;
}

}  // namespace

int TrainerMain(int argc, char** argv, char** envp) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const EnvMap env = EnvironmentToMap(envp);
  const std::string program = SelfExecutable(argv[0]);

  const bool profile = TakeSwitch(&args, "--profile");
  StatusOr<std::string> profile_out = TakeValue(&args, "--out");
  if (!profile_out.ok()) return Fail(profile_out.status());
  StatusOr<NodeFlags> node_flags = ExtractNodeFlags(&args);
  if (!node_flags.ok()) return Fail(node_flags.status());
  StatusOr<train::TrainerFlags> flags = train::ParseTrainerFlags(args);
  if (!flags.ok()) {
    std::cerr << train::TrainerUsage();
    return Fail(flags.status());
  }
  if (flags->help) {
    std::cout << train::TrainerUsage()
              << "\nMulti-process (the job's procsPerNode ranks are launched on this node):\n"
                 "  --nnodes N --node-rank R --master HOST[:PORT]   one node of a multi-node job\n"
                 "\nOffline profiling:\n"
                 "  --profile --job FILE [--out profile.json]       measure memory/compute/"
                 "collectives\n";
    return train::kExitOk;
  }
  StatusOr<api::JobSpec> job = train::LoadJobForFlags(*flags);
  if (!job.ok()) return Fail(job.status());

  StatusOr<std::optional<RankEnv>> rank_env = ParseRankEnv(env, job->parallelism);
  if (!rank_env.ok()) return Fail(rank_env.status());

  if (profile) {
    ProfileOptions po;
    po.out_path = *profile_out;
    po.device = flags->device;
    if (!rank_env->has_value() && job->parallelism.WorldSize() > 1) {
      std::vector<std::string> rank_args = args;
      rank_args.push_back("--profile");
      if (!po.out_path.empty()) rank_args.insert(rank_args.end(), {"--out", po.out_path});
      return RunLauncherMain(*job, flags->job_file, *node_flags, rank_args, env, program);
    }
    const RankEnv renv = rank_env->has_value() ? **rank_env : RankEnv();
    Status profiled = RunProfileRank(*job, renv, po);
    return profiled.ok() ? train::kExitOk : Fail(profiled);
  }

  train::TrainerOptions options;
  options.device = flags->device;
  options.stop_after_steps = flags->stop_after_steps;
  options.serve_metrics = flags->serve_metrics;

  if (!rank_env->has_value()) {
    if (job->parallelism.WorldSize() == 1) {
      StatusOr<RankLayout> rank = RankLayout::Make(job->parallelism, 0);
      if (!rank.ok()) return Fail(rank.status());
      options.stop_signal = InstallForwardingSignalHandlers();
      train::LocalCollectives collectives;
      StatusOr<train::TrainSummary> summary = train::RunTrainer(*job, *rank, &collectives, options);
      return summary.ok() ? train::kExitOk : Fail(summary.status());
    }
    // Ranks re-read the job file with the same flags, minus the node flags.
    return RunLauncherMain(*job, flags->job_file, *node_flags, args, env, program);
  }

  const RankEnv& renv = **rank_env;
  // The launcher forwards SIGINT/SIGTERM: stop after the current step with a
  // checkpoint, on every rank together (the trainer agrees on it collectively).
  options.stop_signal = InstallForwardingSignalHandlers();
  DistributedRunOptions dopts;
  dopts.trainer = options;
  StatusOr<train::TrainSummary> summary = RunDistributedTrainer(*job, renv, dopts);
  return summary.ok() ? train::kExitOk : Fail(summary.status());
}

}  // namespace skrull::dist
