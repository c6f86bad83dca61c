// Where a global rank sits in the DP x CP grid. Torch-free.
//
//   rank = dp_rank * cp + cp_rank
//
// CP group of DP rank d: ranks d*cp .. d*cp + cp - 1 (consecutive, so a CP
// group stays inside a node when procsPerNode is a multiple of cp: the K/V
// exchange is the latency-sensitive traffic). DP group of CP rank c: ranks
// c, cp + c, 2*cp + c, ... Gradients are reduced over the whole world.
#ifndef SKRULL_TRAINER_DIST_RANK_LAYOUT_H_
#define SKRULL_TRAINER_DIST_RANK_LAYOUT_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::dist {

struct RankLayout {
  int rank = 0;
  int world_size = 1;
  int dp = 1;
  int cp = 1;
  int dp_rank = 0;
  int cp_rank = 0;
  std::vector<int> cp_group;  // global ranks of this rank's CP group, by cp_rank
  std::vector<int> dp_group;  // global ranks of this rank's DP group, by dp_rank

  // "rank 3 (dp 1, cp 1)".
  std::string Describe() const;
};

// InvalidArgument when dp * cp != world_size or rank is out of range; the
// message names spec.parallelism.
StatusOr<RankLayout> MakeRankLayout(int rank, int world_size, int dp, int cp);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_RANK_LAYOUT_H_
