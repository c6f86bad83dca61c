// Validation loss (spec.data.eval) is exact: the same number for every
// DP x CP layout and scheduler policy as for one process, as the training
// loss is (dist_equivalence_test.cc). Short runs in forked processes (Gloo).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/trainer/dist_equivalence_harness.h"

namespace skrull::dist::equivalence {
namespace {

std::vector<std::pair<int64_t, double>> EvalLosses(const RunResult& r) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& e : r.summary["eval_losses"]) {
    out.push_back({e["step"].get<int64_t>(), e["loss"].get<double>()});
  }
  return out;
}

TEST(DistributedEval, EvalLossIsTheSameForEveryLayoutAndPolicy) {
  const fs::path root =
      fs::temp_directory_path() / ("skrull_eval_equivalence_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  std::ofstream(root / "config.json") << TinyConfigJson();
  std::ofstream(root / "data.jsonl") << BimodalJsonl(48, 11);
  std::ofstream(root / "held_out.jsonl") << BimodalJsonl(13, 17);  // chunks of 8 and 5
  const std::string eval =
      "    eval: {path: " + (root / "held_out.jsonl").string() + ", everySteps: 2}\n";

  RunSpec reference_spec{1, 1, "skrull", 200};
  reference_spec.data_yaml = eval;
  const RunResult reference = Train(root, reference_spec);
  const auto want = EvalLosses(reference);
  ASSERT_EQ(want.size(), 2u) << reference.summary.dump();  // after steps 2 and 4
  EXPECT_EQ(reference.summary["best_eval_step"].get<int64_t>() % 2, 0);

  for (const std::string policy : {"skrull", "cp-all", "sorted"}) {
    for (const auto& [dp, cp] : std::vector<std::pair<int, int>>{{1, 2}, {2, 1}, {2, 2}}) {
      RunSpec spec{dp, cp, policy, cp == 2 ? 120 : 200};  // CP=2 shards the long samples
      spec.data_yaml = eval;
      const RunResult got = Train(root, spec);
      const auto losses = EvalLosses(got);
      ASSERT_EQ(losses.size(), want.size()) << spec.Name();
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(losses[i].first, want[i].first) << spec.Name();
        EXPECT_LT(std::abs(losses[i].second - want[i].second) / want[i].second, 1e-5)
            << spec.Name() << " eval after step " << want[i].first << ": " << losses[i].second
            << " vs " << want[i].second;
      }
      EXPECT_EQ(got.summary["best_eval_step"], reference.summary["best_eval_step"]) << spec.Name();
    }
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

}  // namespace
}  // namespace skrull::dist::equivalence
