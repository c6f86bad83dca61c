// The whole of skrull-trainer's main for every kind of process, so the
// binary's main.cc stays one line:
//
//   skrull-trainer --job FILE [trainer flags]            (trainer_cli.h)
//                  [--nnodes N --node-rank R --master HOST[:PORT]]
//   skrull-trainer --profile --job FILE [--out profile.json]
//
//   world size 1            trains in this process (LocalCollectives);
//   world > 1, no SKRULL_RANK  this process is the node's launcher
//                            (launcher.h): it re-runs this binary once per
//                            local rank with the rank environment (env.h);
//   SKRULL_RANK set          this process is that rank (distributed_trainer.h).
//   --profile                offline profiling of this device (profile.h).
//
// Flags are parsed with CLI11 (bad flags exit 2 with its message). Before
// any process starts, the node flags are checked against
// spec.parallelism.nodes and the output directory must not be a file (exit
// 2 naming the flag or field).
//
// Environment variables are read here (and only here): `envp` is main's.
#ifndef SKRULL_TRAINER_DIST_TRAINER_MAIN_H_
#define SKRULL_TRAINER_DIST_TRAINER_MAIN_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/dist/launcher.h"
#include "trainer/train/trainer_cli.h"

namespace skrull::dist {

// skrull-trainer's whole command line.
struct TrainerCommandLine {
  train::TrainerFlags trainer;  // trainer.help: --help was given
  NodeFlags node;               // --nnodes, --node-rank, --master (the launcher's)
  bool profile = false;         // --profile
  std::string profile_out;      // --out (with --profile)
};

// Parses the arguments after the program name: the trainer's flags
// (trainer_cli.h), the node flags and --profile / --out. InvalidArgument
// with CLI11's message, which names the flag.
StatusOr<TrainerCommandLine> ParseTrainerCommandLine(const std::vector<std::string>& args);

// The --help text.
std::string TrainerCommandLineUsage();

// OK when `dir` is a directory or can be made one: neither it nor an
// ancestor exists as anything else. InvalidArgument naming `origin` (the
// flag, variable or field that gave `dir`) and the fix otherwise.
Status CheckOutputDirUsable(const std::string& dir, const std::string& origin);

// Returns the process exit code (trainer_cli.h: 0 ok, 2 bad input, 3 out of
// memory, 1 other; a launcher returns the failed rank's code, or 128 +
// signal).
int TrainerMain(int argc, char** argv, char** envp);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_TRAINER_MAIN_H_
