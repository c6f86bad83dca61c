// skrull-trainer: trains one SkrullJob. See trainer_cli.h for flags and exit
// codes. One process (world size 1) trains directly; with a larger world the
// process is either the node's launcher (no SKRULL_RANK) or one rank, which
// trainer/dist handles (dist::TrainerMain). Without trainer/dist in the build
// only world size 1 runs.
#ifdef SKRULL_HAVE_DIST

#include "trainer/dist/trainer_main.h"

int main(int argc, char** argv, char** envp) { return skrull::dist::TrainerMain(argc, argv, envp); }

#else

#include <iostream>
#include <string>
#include <vector>

#include "trainer/train/collectives.h"
#include "trainer/train/trainer.h"
#include "trainer/train/trainer_cli.h"

namespace {

int Fail(const skrull::Status& status) {
  std::cerr << "skrull-trainer: " << status.message() << std::endl;
  return skrull::train::ExitCodeFor(status);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace skrull;
  const std::vector<std::string> args(argv + 1, argv + argc);
  StatusOr<train::TrainerFlags> flags = train::ParseTrainerFlags(args);
  if (!flags.ok()) {
    std::cerr << train::TrainerUsage();
    return Fail(flags.status());
  }
  if (flags->help) {
    std::cout << train::TrainerUsage();
    return train::kExitOk;
  }
  StatusOr<api::JobSpec> job = train::LoadJobForFlags(*flags);
  if (!job.ok()) return Fail(job.status());

  if (job->parallelism.WorldSize() > 1) {
    return Fail(FailedPreconditionError(
        flags->job_file + ": spec.parallelism asks for " +
        std::to_string(job->parallelism.WorldSize()) +
        " processes, but this skrull-trainer was built without the multi-process launcher "
        "(trainer/dist); set procsPerNode: 1, dataParallel: 1, contextParallel: 1"));
  }
  StatusOr<dist::RankLayout> rank = dist::RankLayout::Make(job->parallelism, 0);
  if (!rank.ok()) return Fail(rank.status());
  train::LocalCollectives collectives;
  train::TrainerOptions options;
  options.device = flags->device;
  options.stop_after_steps = flags->stop_after_steps;
  options.serve_metrics = flags->serve_metrics;
  StatusOr<train::TrainSummary> summary = train::RunTrainer(*job, *rank, &collectives, options);
  if (!summary.ok()) return Fail(summary.status());
  return train::kExitOk;
}

#endif  // SKRULL_HAVE_DIST
