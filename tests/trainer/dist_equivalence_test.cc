// The equivalence test: for the same job and seed, the policies
// skrull, cp-all and sorted on DP=1 CP=2, DP=2 CP=1 and DP=2 CP=2 (real
// processes, Gloo on loopback) give the same per-step losses (fp32 relative
// difference < 1e-4) and the same weights after N steps as a single-process
// run of the same global batches.
//
// All tensor work happens in forked children; the parent compares the
// summaries and the final checkpoints' safetensors (torch-free).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/plan.h"
#include "tests/trainer/dist_equivalence_harness.h"

namespace skrull::dist {
namespace {

namespace fs = std::filesystem;
using equivalence::BimodalJsonl;
using equivalence::ExpectSameTraining;
using equivalence::kSteps;
using equivalence::RunResult;
using equivalence::RunSpec;
using equivalence::TinyConfigJson;
using equivalence::Train;

TEST(DistributedEquivalence, PoliciesAndLayoutsTrainLikeOneProcess) {
  const fs::path root =
      fs::temp_directory_path() / ("skrull_equivalence_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  std::ofstream(root / "config.json") << TinyConfigJson();
  std::ofstream(root / "data.jsonl") << BimodalJsonl(48, 11);

  const RunResult reference = Train(root, RunSpec{1, 1, "skrull", 200});
  ASSERT_EQ(reference.losses.size(), static_cast<size_t>(kSteps));

  int runs_with_exchange = 0;
  for (const std::string policy : {"skrull", "cp-all", "sorted"}) {
    for (const auto& [dp, cp] : std::vector<std::pair<int, int>>{{1, 2}, {2, 1}, {2, 2}}) {
      // With CP=2 a bucket below the longest sample (180) forces sharding.
      const RunSpec spec{dp, cp, policy, cp == 2 ? 120 : 200};
      const RunResult got = Train(root, spec);
      ExpectSameTraining(got, reference, spec.Name());
      if (cp == 2) {
        const int64_t exchanges = got.comm["cp"]["distributed_calls"].get<int64_t>();
        EXPECT_GT(exchanges, 0) << spec.Name() << " never exchanged K/V";
        if (exchanges > 0) ++runs_with_exchange;
      }
    }
  }
  EXPECT_EQ(runs_with_exchange, 6);
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

// Rewrites every micro-batch of a CP=4 plan onto groups of 1, 2 and 4 ranks:
// its longest sequence over all 4, the next two on the 2-groups {0,1} and
// {2,3}, the rest local round-robin. Deterministic: the same on every rank.
Status OntoGroupsOf1And2And4(scheduler::Plan* plan) {
  for (scheduler::DpRankPlan& rank : plan->ranks) {
    for (scheduler::MicroBatch& mb : rank.micro_batches) {
      std::vector<size_t> order(mb.sequences.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return mb.sequences[a].length > mb.sequences[b].length;
      });
      for (size_t k = 0; k < order.size(); ++k) {
        scheduler::PlacedSequence& s = mb.sequences[order[k]];
        const int code = k == 0   ? scheduler::kDistributed
                         : k == 1 ? scheduler::SubGroupCode(0, 2)
                         : k == 2 ? scheduler::SubGroupCode(2, 2)
                                  : static_cast<int>(k % 4);
        s = scheduler::PlacedSequence::FromCode(s.id, s.length, code, 4);
      }
    }
  }
  return OkStatus();
}

TEST(DistributedEquivalence, SubGroupsAtCp4TrainLikeOneProcess) {
  const fs::path root =
      fs::temp_directory_path() / ("skrull_subgroup_equivalence_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  std::ofstream(root / "config.json") << TinyConfigJson();
  std::ofstream(root / "data.jsonl") << BimodalJsonl(48, 11);
  const RunResult reference = Train(root, RunSpec{1, 1, "skrull", 2000});
  const RunSpec spec{1, 4, "skrull", 2000};
  const RunResult got = Train(root, spec, OntoGroupsOf1And2And4);
  ExpectSameTraining(got, reference, spec.Name() + "-subgroups");
  // Rank 0 exchanges on its 2-group and on all 4 ranks in each micro-batch
  // that has both: more all-gathers than exchanging calls.
  const int64_t calls = got.comm["cp"]["distributed_calls"].get<int64_t>();
  EXPECT_GT(calls, 0);
  EXPECT_GT(got.comm["cp"]["allgathers"].get<int64_t>(), calls) << got.comm.dump();
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

}  // namespace
}  // namespace skrull::dist
