// Test support: what /proc says about a process, for tests that kill a
// launcher and check that its ranks went with it. Torch-free; Linux only.
#ifndef SKRULL_TRAINER_DIST_TESTING_PROCESSES_H_
#define SKRULL_TRAINER_DIST_TESTING_PROCESSES_H_

#include <sys/types.h>

#include <chrono>
#include <vector>

namespace skrull::dist::testing {

// True while `pid` runs or is stopped; false once it is a zombie or gone.
bool ProcessIsAlive(pid_t pid);

// The live processes whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> ChildrenOf(pid_t parent);

// Polls until none of `pids` is alive or `timeout` passes; true when all are
// gone.
bool WaitUntilGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout);

}  // namespace skrull::dist::testing

#endif  // SKRULL_TRAINER_DIST_TESTING_PROCESSES_H_
