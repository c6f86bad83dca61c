#include "trainer/dist/trainer_main.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "trainer/dist/distributed_trainer.h"
#include "trainer/dist/env.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/profile.h"
#include "trainer/train/collectives.h"
#include "trainer/train/trainer.h"

namespace skrull::dist {
namespace {

namespace fs = std::filesystem;

constexpr char kMultiNodeGroup[] = "One node of a multi-node job (the launcher's flags)";
constexpr char kProfileGroup[] = "Offline profiling (measure memory, compute, collectives)";

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

void AddCommandLine(CLI::App* app, TrainerCommandLine* cl) {
  train::AddTrainerFlags(app, &cl->trainer);
  app->add_option_function<int>(
         "--nnodes", [cl](const int& n) { cl->node.nnodes = n; },
         "nodes in the job (must equal spec.parallelism.nodes)")
      ->check(CLI::Range(1, 1 << 30).description(""))
      ->type_name("N")
      ->group(kMultiNodeGroup);
  app->add_option_function<int>(
         "--node-rank", [cl](const int& r) { cl->node.node_rank = r; }, "this node's rank, 0..N-1")
      ->check(CLI::Range(0, 1 << 30).description(""))
      ->type_name("R")
      ->group(kMultiNodeGroup);
  app->add_option_function<std::string>(
         "--master",
         [cl](const std::string& text) {
           Status s = ParseMasterFlag(text, &cl->node);
           if (!s.ok()) throw CLI::ValidationError(s.message());
         },
         "node 0's rendezvous address (port 29500 when omitted)")
      ->type_name("HOST[:PORT]")
      ->group(kMultiNodeGroup);
  app->add_flag("--profile", cl->profile, "profile this machine for the job instead of training")
      ->group(kProfileGroup);
  app->add_option("--out", cl->profile_out, "where --profile writes its JSON")
      ->type_name("FILE")
      ->group(kProfileGroup);
}

// The arguments every rank gets: the trainer's flags, not the node flags.
std::vector<std::string> RankArgs(const TrainerCommandLine& cl) {
  std::vector<std::string> args = train::TrainerFlagsToArgs(cl.trainer);
  if (cl.profile) {
    args.push_back("--profile");
    if (!cl.profile_out.empty()) args.insert(args.end(), {"--out", cl.profile_out});
  }
  return args;
}

// The output directories this process or its ranks will create.
Status CheckOutputDirs(const api::JobSpec& job, const TrainerCommandLine& cl, const EnvMap& env) {
  if (auto it = env.find(env::kOutputDir); it != env.end() && !it->second.empty()) {
    SKRULL_RETURN_IF_ERROR(CheckOutputDirUsable(it->second, env::kOutputDir));
  }
  if (job.training.output_dir.empty()) return OkStatus();
  const std::string origin = !cl.trainer.output_dir.empty()
                                 ? std::string("--output-dir")
                                 : cl.trainer.job_file + ": spec.training.outputDir";
  return CheckOutputDirUsable(job.training.output_dir, origin);
}

}  // namespace

StatusOr<TrainerCommandLine> ParseTrainerCommandLine(const std::vector<std::string>& args) {
  TrainerCommandLine cl;
  CLI::App app("Trains one SkrullJob.", "skrull-trainer");
  AddCommandLine(&app, &cl);
  bool help = false;
  SKRULL_RETURN_IF_ERROR(train::ParseCommandLine(&app, args, &help));
  if (help) {
    TrainerCommandLine only_help;
    only_help.trainer.help = true;
    return only_help;
  }
  return cl;
}

std::string TrainerCommandLineUsage() {
  TrainerCommandLine cl;
  CLI::App app("Trains one SkrullJob.", "skrull-trainer");
  AddCommandLine(&app, &cl);
  return app.help();
}

Status CheckOutputDirUsable(const std::string& dir, const std::string& origin) {
  std::error_code ec;
  const fs::path wanted = fs::absolute(dir, ec).lexically_normal();
  for (fs::path p = wanted; !p.empty(); p = p.parent_path()) {
    const fs::file_status st = fs::status(p, ec);
    if (fs::is_directory(st)) return OkStatus();
    if (fs::exists(st)) {
      const std::string what = p == wanted ? wanted.string() + " is a file, not a directory"
                                           : wanted.string() + ": its parent " + p.string() +
                                                 " is a file, not a directory";
      return InvalidArgumentError(origin + ": " + what +
                                  "; name a directory (it is created when missing) or move the "
                                  "file away");
    }
    if (p == p.parent_path()) break;
  }
  return OkStatus();
}

int TrainerMain(int argc, char** argv, char** envp) {
  const EnvMap env = EnvironmentToMap(envp);
  const std::string program = SelfExecutable(argv[0]);

  StatusOr<TrainerCommandLine> cl = ParseTrainerCommandLine({argv + 1, argv + argc});
  if (!cl.ok()) {
    std::cerr << TrainerCommandLineUsage();
    return Fail(cl.status());
  }
  if (cl->trainer.help) {
    std::cout << TrainerCommandLineUsage();
    return train::kExitOk;
  }
  const train::TrainerFlags& flags = cl->trainer;
  StatusOr<api::JobSpec> job = train::LoadJobForFlags(flags);
  if (!job.ok()) return Fail(job.status());
  Status checked = CheckNodeFlagsAgainstJob(*job, flags.job_file, cl->node, env);
  if (checked.ok()) checked = CheckOutputDirs(*job, *cl, env);
  if (!checked.ok()) return Fail(checked);

  StatusOr<std::optional<RankEnv>> rank_env = ParseRankEnv(env, job->parallelism);
  if (!rank_env.ok()) return Fail(rank_env.status());

  if (cl->profile) {
    ProfileOptions po;
    po.out_path = cl->profile_out;
    po.device = flags.device;
    if (!rank_env->has_value() && job->parallelism.WorldSize() > 1) {
      return RunLauncherMain(*job, flags.job_file, cl->node, RankArgs(*cl), env, program);
    }
    const RankEnv renv = rank_env->has_value() ? **rank_env : RankEnv();
    Status profiled = RunProfileRank(*job, renv, po);
    return profiled.ok() ? train::kExitOk : Fail(profiled);
  }

  train::TrainerOptions options;
  options.device = flags.device;
  options.stop_after_steps = flags.stop_after_steps;
  options.serve_metrics = flags.serve_metrics;
  // The out-of-memory test hook's step; -1 when unset.
  StatusOr<int> oom_step = ParseIntVar(env, env::kTestOutOfMemoryAtStep, 0, -1);
  if (!oom_step.ok()) return Fail(oom_step.status());
  options.out_of_memory_at_step = *oom_step;
  StatusOr<int> hook_oom_step = ParseIntVar(env, env::kTestOutOfMemoryInGradHookAtStep, 0, -1);
  if (!hook_oom_step.ok()) return Fail(hook_oom_step.status());
  StatusOr<int> hook_oom_rank = ParseIntVar(env, env::kTestOutOfMemoryInGradHookRank, 0, -1);
  if (!hook_oom_rank.ok()) return Fail(hook_oom_rank.status());
  const int this_rank = rank_env->has_value() ? (*rank_env)->layout.rank() : 0;
  if (*hook_oom_rank < 0 || *hook_oom_rank == this_rank) {
    options.out_of_memory_in_gradient_hook_at_step = *hook_oom_step;
  }

  if (!rank_env->has_value()) {
    if (job->parallelism.WorldSize() == 1) {
      StatusOr<RankLayout> rank = RankLayout::Make(job->parallelism, 0);
      if (!rank.ok()) return Fail(rank.status());
      options.stop_signal = InstallForwardingSignalHandlers();
      train::LocalCollectives collectives;
      StatusOr<train::TrainSummary> summary = train::RunTrainer(*job, *rank, &collectives, options);
      return summary.ok() ? train::kExitOk : Fail(summary.status());
    }
    // Ranks re-read the job file with the same trainer flags.
    return RunLauncherMain(*job, flags.job_file, cl->node, RankArgs(*cl), env, program);
  }

  const RankEnv& renv = **rank_env;
  StatusOr<int> disk_full_rank = ParseIntVar(env, env::kTestDiskFullOnResumeRank, 0, -1);
  if (!disk_full_rank.ok()) return Fail(disk_full_rank.status());
  options.disk_full_on_resume = *disk_full_rank == renv.layout.rank();
  // The launcher forwards SIGINT/SIGTERM: stop after the current step with a
  // checkpoint, on every rank together (the trainer agrees on it collectively).
  options.stop_signal = InstallForwardingSignalHandlers();
  DistributedRunOptions dopts;
  dopts.trainer = options;
  StatusOr<train::TrainSummary> summary = RunDistributedTrainer(*job, renv, dopts);
  return summary.ok() ? train::kExitOk : Fail(summary.status());
}

}  // namespace skrull::dist
