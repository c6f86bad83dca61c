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
// Environment variables are read here (and only here): `envp` is main's.
#ifndef SKRULL_TRAINER_DIST_TRAINER_MAIN_H_
#define SKRULL_TRAINER_DIST_TRAINER_MAIN_H_

namespace skrull::dist {

// Returns the process exit code (trainer_cli.h: 0 ok, 2 bad input, 1 other;
// a launcher returns the failed rank's code, or 128 + signal).
int TrainerMain(int argc, char** argv, char** envp);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_TRAINER_MAIN_H_
