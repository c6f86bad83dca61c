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

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/rank_layout.h"

namespace skrull::dist::testing {

// Forks `world_size` children; child r runs body(r, port) and exits with its
// return value (stdout/stderr flushed, no destructors run). `port` is a free
// loopback port shared by all ranks. Returns OK when every child exited 0;
// otherwise the error names each failed rank and how it ended. Children still
// running at `timeout` are killed (SIGKILL) and reported as timed out.
Status RunForkedRanks(int world_size, const std::function<int(int rank, int port)>& body,
                      std::chrono::seconds timeout = std::chrono::seconds(120));

// The ranks of the job in `job_file`, all on this node, as forked children:
// child r loads the job (exit 2, the error on stderr, when it cannot or when
// its nodes x procsPerNode is not world_size) and runs body(job, env) with
// env.layout = RankLayout::Make(job.parallelism, r) (the master on a free
// loopback port, rendezvous within
// `rendezvous_timeout_seconds`); it exits 0 when body returns OK, else 1 with
// "<label> rank r: <status>" on stderr. Returns as RunForkedRanks does.
Status RunForkedJobRanks(
    const std::string& job_file, int world_size, const std::string& label,
    const std::function<Status(const api::JobSpec& job, const RankEnv& env)>& body,
    std::chrono::seconds timeout = std::chrono::seconds(120), int rendezvous_timeout_seconds = 60);

// spec.parallelism with these dimensions (tests of layouts and rank
// environments without a job file).
api::ParallelismSpec Parallelism(int nodes, int procs_per_node, int dp, int cp);

// The layout of `rank` in a one-node job of dp x cp processes (tests of
// collectives and attention that need groups without a job file).
StatusOr<RankLayout> OneNodeLayout(int rank, int dp, int cp);

}  // namespace skrull::dist::testing

#endif  // SKRULL_TRAINER_DIST_TESTING_FORK_RANKS_H_
