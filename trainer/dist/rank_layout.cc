#include "trainer/dist/rank_layout.h"

#include <cstdint>

namespace skrull::dist {

StatusOr<RankLayout> RankLayout::Make(const api::ParallelismSpec& p, int rank) {
  const struct {
    const char* name;
    int value;
  } dims[] = {{"nodes", p.nodes},
              {"procsPerNode", p.procs_per_node},
              {"dataParallel", p.data_parallel},
              {"contextParallel", p.context_parallel}};
  for (const auto& d : dims) {
    if (d.value < 1) {
      return InvalidArgumentError(std::string("spec.parallelism.") + d.name +
                                  ": must be >= 1 (got " + std::to_string(d.value) + ")");
    }
  }
  // 64-bit: two int dimensions may overflow an int product.
  const int64_t world = int64_t{p.nodes} * p.procs_per_node;
  const int64_t grid = int64_t{p.data_parallel} * p.context_parallel;
  if (grid != world) {
    return InvalidArgumentError(
        "spec.parallelism: dataParallel x contextParallel = " + std::to_string(p.data_parallel) +
        " x " + std::to_string(p.context_parallel) + " = " + std::to_string(grid) +
        " must equal the world size (nodes x procsPerNode = " + std::to_string(world) + ")");
  }
  if (rank < 0 || rank >= world) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " is outside [0, " +
                                std::to_string(world) +
                                ") (spec.parallelism: nodes x procsPerNode)");
  }
  RankLayout l;
  l.nnodes_ = p.nodes;
  l.procs_per_node_ = p.procs_per_node;
  l.dp_ = p.data_parallel;
  l.cp_ = p.context_parallel;
  l.rank_ = rank;
  return l;
}

std::vector<int> RankLayout::CpGroup() const {
  std::vector<int> group;
  for (int c = 0; c < cp_; ++c) group.push_back(RankAt(dp_rank(), c));
  return group;
}

std::vector<int> RankLayout::DpGroup() const {
  std::vector<int> group;
  for (int d = 0; d < dp_; ++d) group.push_back(RankAt(d, cp_rank()));
  return group;
}

std::string RankLayout::Describe() const {
  return "rank " + std::to_string(rank_) + " (dp " + std::to_string(dp_rank()) + ", cp " +
         std::to_string(cp_rank()) + ")";
}

}  // namespace skrull::dist
