#include "trainer/dist/rank_layout.h"

namespace skrull::dist {

std::string RankLayout::Describe() const {
  return "rank " + std::to_string(rank) + " (dp " + std::to_string(dp_rank) + ", cp " +
         std::to_string(cp_rank) + ")";
}

StatusOr<RankLayout> MakeRankLayout(int rank, int world_size, int dp, int cp) {
  if (dp < 1 || cp < 1) {
    return InvalidArgumentError(
        "spec.parallelism: dataParallel and contextParallel must be >= 1 (got " +
        std::to_string(dp) + " and " + std::to_string(cp) + ")");
  }
  if (dp * cp != world_size) {
    return InvalidArgumentError(
        "spec.parallelism: dataParallel x contextParallel = " + std::to_string(dp) + " x " +
        std::to_string(cp) + " = " + std::to_string(dp * cp) +
        " must equal the world size (nodes x procsPerNode = " + std::to_string(world_size) + ")");
  }
  if (rank < 0 || rank >= world_size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " outside the world of " +
                                std::to_string(world_size));
  }
  RankLayout l;
  l.rank = rank;
  l.world_size = world_size;
  l.dp = dp;
  l.cp = cp;
  l.dp_rank = rank / cp;
  l.cp_rank = rank % cp;
  for (int c = 0; c < cp; ++c) l.cp_group.push_back(l.dp_rank * cp + c);
  for (int d = 0; d < dp; ++d) l.dp_group.push_back(d * cp + l.cp_rank);
  return l;
}

}  // namespace skrull::dist
