// Where one process sits in a job: the one rank-layout type. Torch-free.
//
// A job of `nodes` x `procsPerNode` processes is split two ways:
//
//   by machine:  rank = node_rank * procs_per_node + local_rank
//   by work:     rank = dp_rank * cp + cp_rank
//
// CP group of DP rank d: ranks d*cp .. d*cp + cp - 1 (consecutive, so a CP
// group stays inside a node when procsPerNode is a multiple of cp: the K/V
// exchange is the latency-sensitive traffic). DP group of CP rank c: ranks
// c, cp + c, 2*cp + c, ... Gradients are reduced over the whole world.
//
// RankLayout::Make validates the job's spec.parallelism and the rank once;
// everything else (the launcher's rank variables, the trainer, the process
// groups, metrics labels, profiling) asks the layout instead of computing a
// rank itself. Like torchtitan's ParallelDims.
//
// Thread safety: an immutable value; copy freely.
#ifndef SKRULL_TRAINER_DIST_RANK_LAYOUT_H_
#define SKRULL_TRAINER_DIST_RANK_LAYOUT_H_

#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"

namespace skrull::dist {

class RankLayout {
 public:
  // Rank 0 of a one-process job (dp 1, cp 1, one node).
  RankLayout() = default;

  // The only way to lay out a rank other than rank 0 of 1. InvalidArgument,
  // naming the spec.parallelism field, when a dimension is < 1, when
  // dataParallel x contextParallel != nodes x procsPerNode, or when `rank`
  // is outside [0, nodes x procsPerNode).
  static StatusOr<RankLayout> Make(const api::ParallelismSpec& parallelism, int rank);

  // The launcher's arithmetic: the global rank of process `local_rank` on
  // node `node_rank`. REQUIRES: 0 <= local_rank < procs_per_node.
  static int GlobalRank(int node_rank, int local_rank, int procs_per_node) {
    return node_rank * procs_per_node + local_rank;
  }

  // Sizes.
  int world_size() const { return nnodes_ * procs_per_node_; }
  int nnodes() const { return nnodes_; }
  int procs_per_node() const { return procs_per_node_; }  // the local world size
  int dp() const { return dp_; }
  int cp() const { return cp_; }

  // This process.
  int rank() const { return rank_; }
  int node_rank() const { return rank_ / procs_per_node_; }
  int local_rank() const { return rank_ % procs_per_node_; }  // picks the GPU, metrics port
  int dp_rank() const { return rank_ / cp_; }
  int cp_rank() const { return rank_ % cp_; }

  // The global rank at (dp_rank, cp_rank). REQUIRES: both in range.
  int RankAt(int dp_rank, int cp_rank) const { return dp_rank * cp_ + cp_rank; }
  // Global ranks of this rank's CP group, by cp_rank; of its DP group, by dp_rank.
  std::vector<int> CpGroup() const;
  std::vector<int> DpGroup() const;

  // "rank 3 (dp 1, cp 1)".
  std::string Describe() const;

 private:
  int nnodes_ = 1;
  int procs_per_node_ = 1;
  int dp_ = 1;
  int cp_ = 1;
  int rank_ = 0;
};

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_RANK_LAYOUT_H_
