// Where `skrull-controller run` finds the skrull-trainer it starts.
//
// `--trainer` takes a path (anything with a '/') or a program name (default
// "skrull-trainer"). A name is looked up beside the controller's own binary
// first (the build puts both in build/bin, so the README's
// `build/bin/skrull-controller run JOB.yaml` works without build/bin on PATH),
// then on PATH. Errors name `--trainer` and say how to fix it, before any run
// starts.
#ifndef SKRULL_CONTROLLER_LOCAL_TRAINER_BINARY_H_
#define SKRULL_CONTROLLER_LOCAL_TRAINER_BINARY_H_

#include <string>

#include "common/status.h"

namespace skrull::local {

// The executable file `trainer` (--trainer's value) names.
//  * with a '/': that file; NotFound when missing, InvalidArgument when it is
//    a directory or not an executable regular file;
//  * else `beside_dir`/`trainer` when that is an executable regular file
//    (`beside_dir` "" = skip), then the first such file in the ':'-separated
//    `path_var` (an empty entry is the working directory, as for execvp);
//    NotFound naming the places looked in.
// Paths are returned as found (not made absolute).
StatusOr<std::string> FindTrainerBinary(const std::string& trainer, const std::string& beside_dir,
                                        const std::string& path_var);

// The directory of this process's executable (/proc/self/exe), "" when it
// cannot be read.
std::string SelfExecutableDir();

}  // namespace skrull::local

#endif  // SKRULL_CONTROLLER_LOCAL_TRAINER_BINARY_H_
