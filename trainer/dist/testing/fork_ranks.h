// Test support: run N ranks of a multi-process test as forked children on
// loopback. Ships with the library (like c10d's HashStore) so every test of
// a collective uses the same harness. Torch-free.
//
// Fork before the parent uses libtorch's thread pools: a child of a process
// whose OpenMP pool has started can deadlock. Tests that fork therefore do
// all tensor work inside the children.
#ifndef SKRULL_TRAINER_DIST_TESTING_FORK_RANKS_H_
#define SKRULL_TRAINER_DIST_TESTING_FORK_RANKS_H_

#include <chrono>
#include <functional>
#include <string>

#include "common/status.h"

namespace skrull::dist::testing {

// Forks `world_size` children; child r runs body(r, port) and exits with its
// return value (stdout/stderr flushed, no destructors run). `port` is a free
// loopback port shared by all ranks. Returns OK when every child exited 0;
// otherwise the error names each failed rank and how it ended. Children still
// running at `timeout` are killed (SIGKILL) and reported as timed out.
Status RunForkedRanks(int world_size, const std::function<int(int rank, int port)>& body,
                      std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace skrull::dist::testing

#endif  // SKRULL_TRAINER_DIST_TESTING_FORK_RANKS_H_
