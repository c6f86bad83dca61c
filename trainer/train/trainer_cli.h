// Command line of skrull-trainer (the binary's main.cc stays thin):
//
//   skrull-trainer --job FILE [--steps N] [--output-dir DIR] [--device D]
//                  [--stop-after-steps N] [--no-metrics-server]
//
// Exit codes: 0 success; 2 bad input (flags, job file, model config, weights,
// data, checkpoints: the message names the file, field and fix); 1 any other
// failure (I/O, a libtorch error, a peer rank).
#ifndef SKRULL_TRAINER_TRAIN_TRAINER_CLI_H_
#define SKRULL_TRAINER_TRAIN_TRAINER_CLI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::train {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

struct TrainerFlags {
  std::string job_file;          // --job (required)
  std::optional<int64_t> steps;  // --steps: overrides spec.training.steps
  std::string output_dir;        // --output-dir: overrides spec.training.outputDir
  std::string device = "auto";   // --device: auto | cpu | cuda[:N]
  int64_t stop_after_steps = 0;  // --stop-after-steps: stop early with a checkpoint
  bool serve_metrics = true;     // --no-metrics-server turns it off
  bool help = false;             // --help / -h
};

// Parses the arguments after the program name ("--flag value" and
// "--flag=value"). InvalidArgument naming the flag and the fix.
StatusOr<TrainerFlags> ParseTrainerFlags(const std::vector<std::string>& args);

std::string TrainerUsage();

// Loads flags.job_file and applies --steps and --output-dir (a relative
// --output-dir is taken relative to the working directory).
StatusOr<api::JobSpec> LoadJobForFlags(const TrainerFlags& flags);

// kExitBadInput for InvalidArgument / NotFound / FailedPrecondition,
// kExitFailure for other errors, kExitOk for OK.
int ExitCodeFor(const Status& status);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_TRAINER_CLI_H_
