// Environment variables that wire one trainer process into a job. The launcher
// (and later the controller, for Kubernetes pods) sets them; the trainer's
// main reads them into a RankEnv (launcher.h), whose RankLayout (rank_layout.h)
// every other part asks; nothing else reads them.
//
// A process started with SKRULL_RANK set is one rank of a job; without it,
// `skrull-trainer --job FILE` is a launcher that spawns the node's ranks.
//
// Header-only and dependency-free so the controller can include it.
#ifndef SKRULL_TRAINER_DIST_ENV_H_
#define SKRULL_TRAINER_DIST_ENV_H_

namespace skrull::dist::env {

// Global rank in [0, SKRULL_WORLD_SIZE). rank = node_rank * procs_per_node + local_rank
// and, inside the job, rank = dp_rank * contextParallel + cp_rank.
inline constexpr char kRank[] = "SKRULL_RANK";
inline constexpr char kWorldSize[] = "SKRULL_WORLD_SIZE";
// Rank on this node in [0, SKRULL_LOCAL_WORLD_SIZE); picks the GPU.
inline constexpr char kLocalRank[] = "SKRULL_LOCAL_RANK";
inline constexpr char kLocalWorldSize[] = "SKRULL_LOCAL_WORLD_SIZE";
inline constexpr char kNodeRank[] = "SKRULL_NODE_RANK";
inline constexpr char kNnodes[] = "SKRULL_NNODES";
// Rendezvous: rank 0 serves the TCPStore on SKRULL_MASTER_ADDR:SKRULL_MASTER_PORT.
inline constexpr char kMasterAddr[] = "SKRULL_MASTER_ADDR";
inline constexpr char kMasterPort[] = "SKRULL_MASTER_PORT";
// Path of the SkrullJob YAML every rank loads.
inline constexpr char kJobFile[] = "SKRULL_JOB_FILE";
// Overrides spec.training.outputDir (the controller mounts a volume there).
inline constexpr char kOutputDir[] = "SKRULL_OUTPUT_DIR";
// Seconds a rank waits at rendezvous for the others (default 300).
inline constexpr char kRendezvousTimeoutSeconds[] = "SKRULL_RENDEZVOUS_TIMEOUT_SECONDS";
// Network interface Gloo binds to on multi-node CPU jobs (e.g. "eth0");
// default: the interface the host name resolves to.
inline constexpr char kGlooInterface[] = "SKRULL_GLOO_IFNAME";
// Opaque id shared by the ranks of one launch (logs, metrics labels).
inline constexpr char kRunId[] = "SKRULL_RUN_ID";

// Test hook: every rank throws the CUDA out-of-memory error at this step
// (TrainerOptions::out_of_memory_at_step), so the out-of-memory path (record,
// exit status 3, the tuner's step-down) is tested on CPU. Unset in real runs.
inline constexpr char kTestOutOfMemoryAtStep[] = "SKRULL_TEST_OOM_AT_STEP";
// Test hook: the rank with this number fails to resume from its checkpoint with
// an I/O error as on a full disk (TrainerOptions::disk_full_on_resume), so the
// launcher's choice of the rank to blame is tested. Unset in real runs.
inline constexpr char kTestDiskFullOnResumeRank[] = "SKRULL_TEST_DISK_FULL_ON_RESUME_RANK";
// Test hook: at this step, packing a gradient bucket inside a gradient hook
// throws the CUDA out-of-memory error (TrainerOptions::
// out_of_memory_in_gradient_hook_at_step) on the rank ..._RANK names (unset:
// every rank), so an out-of-memory error on one rank is seen to end every
// rank with the record and exit status 3. Unset in real runs.
inline constexpr char kTestOutOfMemoryInGradHookAtStep[] = "SKRULL_TEST_OOM_IN_GRAD_HOOK_AT_STEP";
inline constexpr char kTestOutOfMemoryInGradHookRank[] = "SKRULL_TEST_OOM_IN_GRAD_HOOK_RANK";

// Standard variables the launcher sets for workers when the user did not.
inline constexpr char kOmpNumThreads[] = "OMP_NUM_THREADS";

}  // namespace skrull::dist::env

#endif  // SKRULL_TRAINER_DIST_ENV_H_
