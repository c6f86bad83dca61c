// Which device a rank trains on: the one rule the trainer (train/trainer.cc),
// the NCCL process groups (process_groups.cc) and the profiler (profile.cc)
// follow, so a rank's tensors and its NCCL communicators are on one GPU.
// Torch-free: the caller passes how many CUDA devices libtorch sees.
//
// Rule, for the trainer's --device flag:
//   cpu      the CPU.
//   auto     a GPU job (spec.resources.gpusPerProc > 0) with a GPU visible:
//            cuda:<local rank>; otherwise the CPU.
//   cuda     cuda:<local rank>.
//   cuda:N   cuda:N; only with one process per node (every rank of a node
//            would otherwise share GPU N).
// A GPU is never shared by two ranks of a node: NCCL refuses that ("Duplicate
// GPU detected"), and they would fight for its memory. So a CUDA choice with
// more processes per node than visible GPUs is refused, naming
// spec.parallelism.procsPerNode and the visible count (the controller gives
// a pod procsPerNode x gpusPerProc GPUs, all visible to each rank; the
// launcher does not narrow CUDA_VISIBLE_DEVICES per rank).
//
// Thread safety: pure functions.
#ifndef SKRULL_TRAINER_DIST_RANK_DEVICE_H_
#define SKRULL_TRAINER_DIST_RANK_DEVICE_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace skrull::dist {

struct RankDevice {
  bool cuda = false;
  int index = 0;  // the CUDA device index when cuda
  // No GPU was visible to a GPU job under `auto`: the caller says so.
  bool fell_back_to_cpu = false;
  // "cpu" or "cuda:N" (what compat::ParseDevice reads back).
  std::string Name() const;
};

// The device of the process at `local_rank` of `procs_per_node` on its node.
// InvalidArgument for an unknown flag or cuda:N with procs_per_node > 1;
// FailedPrecondition for cuda without a visible GPU, an index not visible,
// or more processes per node than visible GPUs.
// REQUIRES: 0 <= local_rank < procs_per_node; visible_cuda_devices >= 0.
StatusOr<RankDevice> ChooseRankDevice(const std::string& device_flag, int gpus_per_proc,
                                      int local_rank, int procs_per_node,
                                      int64_t visible_cuda_devices);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_RANK_DEVICE_H_
