// Command line of skrull-trainer (the binary's main.cc stays thin):
//
//   skrull-trainer --job FILE [--steps N] [--output-dir DIR] [--device D]
//                  [--stop-after-steps N] [--no-metrics-server]
//
// Flags are parsed with CLI11 ("--flag value" and "--flag=value"); a bad flag
// is InvalidArgument with CLI11's message, which names the flag.
//
// Exit codes: 0 success; 2 bad input (flags, job file, model config, weights,
// data, checkpoints: the message names the file, field and fix); 3 out of
// memory (a CUDA allocation failed; the rank wrote <outputDir>/oom[-rank<r>].json,
// trainer/metrics/oom_record.h); 1 any other failure (I/O, a libtorch error,
// a peer rank).
#ifndef SKRULL_TRAINER_TRAIN_TRAINER_CLI_H_
#define SKRULL_TRAINER_TRAIN_TRAINER_CLI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/metrics/oom_record.h"

namespace CLI {
class App;
}  // namespace CLI

namespace skrull::train {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = metrics::kOutOfMemoryExitCode;

struct TrainerFlags {
  std::string job_file;          // --job (required)
  std::optional<int64_t> steps;  // --steps: overrides spec.training.steps
  std::string output_dir;        // --output-dir: overrides spec.training.outputDir
  std::string device = "auto";   // --device: auto | cpu | cuda[:N]
  int64_t stop_after_steps = 0;  // --stop-after-steps: stop early with a checkpoint
  bool serve_metrics = true;     // --no-metrics-server turns it off
  bool help = false;             // --help / -h
};

// Declares the trainer's flags on `app`, stored into `*flags` when `app`
// parses (other binaries' Apps add more flags next to these). --job is
// required unless --help is given. `flags` must outlive the parse.
void AddTrainerFlags(CLI::App* app, TrainerFlags* flags);

// Parses `args` (the arguments after the program name) with `app`, which
// must declare -h/--help (CLI11's default). Sets *help when --help was given
// (nothing else is checked then). InvalidArgument with CLI11's message.
Status ParseCommandLine(CLI::App* app, const std::vector<std::string>& args, bool* help);

// Parses the arguments after the program name. `--help` sets help (and
// skips the other checks). InvalidArgument with CLI11's message, which names
// the flag: "--steps: Value 0 not in range [1 - ...]".
StatusOr<TrainerFlags> ParseTrainerFlags(const std::vector<std::string>& args);

// Arguments that parse back to `flags` (help aside); the launcher gives them
// to every rank.
std::vector<std::string> TrainerFlagsToArgs(const TrainerFlags& flags);

// The --help text of the trainer's flags.
std::string TrainerUsage();

// Loads flags.job_file and applies --steps and --output-dir (a relative
// --output-dir is taken relative to the working directory).
StatusOr<api::JobSpec> LoadJobForFlags(const TrainerFlags& flags);

// kExitBadInput for InvalidArgument / NotFound / FailedPrecondition,
// kExitOutOfMemory for OutOfMemory, kExitFailure for other errors, kExitOk
// for OK.
int ExitCodeFor(const Status& status);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_TRAINER_CLI_H_
