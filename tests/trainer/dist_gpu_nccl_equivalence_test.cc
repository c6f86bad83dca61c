// The NCCL equivalence test: the same jobs as dist_equivalence_test, one GPU
// per rank (spec.resources.gpusPerProc: 1, so c10d uses NCCL, the CP
// exchange its native all-gather / reduce-scatter and the gradient buckets
// device tensors), give the per-step losses and final weights of a
// single-process run on one GPU. DP=1 x CP=2 and DP=2 x CP=1 need two GPUs;
// DP=2 x CP=2 runs where four are visible. CTest label gpu; skips, saying
// why, without a CUDA build or with fewer than two GPUs.
//
// The parent never initialises CUDA (a forked child of a process that has
// cannot use it): a forked probe counts the GPUs.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/trainer/dist_equivalence_harness.h"
#include "trainer/dist/process_groups.h"
#include "trainer/model/torch_compat.h"

namespace skrull::dist {
namespace {

namespace fs = std::filesystem;
using equivalence::RunResult;
using equivalence::RunSpec;

// GPUs a child process sees (0 when the probe fails).
int VisibleGpusFromChild() {
  const pid_t pid = fork();
  if (pid == 0) {
    const int64_t n = model::compat::CudaAvailable() ? model::compat::CudaDeviceCount() : 0;
    _exit(static_cast<int>(std::min<int64_t>(n, 100)));
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
  return WEXITSTATUS(status);
}

TEST(NcclEquivalence, PoliciesAndLayoutsOnGpusTrainLikeOneGpu) {
  if (!NcclAvailable()) {
    GTEST_SKIP() << "this build has no NCCL (configure with -DSKRULL_WITH_CUDA=ON against a CUDA "
                    "libtorch)";
  }
  const int gpus = VisibleGpusFromChild();
  if (gpus < 2) GTEST_SKIP() << "needs two or more GPUs, " << gpus << " visible";

  const fs::path root =
      fs::temp_directory_path() / ("skrull_nccl_equivalence_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  std::ofstream(root / "config.json") << equivalence::TinyConfigJson();
  std::ofstream(root / "data.jsonl") << equivalence::BimodalJsonl(48, 11);

  auto on_gpus = [](RunSpec s) {
    s.gpus_per_proc = 1;
    s.device = "auto";  // cuda:<local rank>
    return s;
  };
  const RunResult reference = equivalence::Train(root, on_gpus(RunSpec{1, 1, "skrull", 200}));
  ASSERT_EQ(reference.losses.size(), static_cast<size_t>(equivalence::kSteps));

  std::vector<std::pair<int, int>> layouts = {{1, 2}, {2, 1}};
  if (gpus >= 4) layouts.emplace_back(2, 2);
  // float32 on GPUs: cuBLAS and NCCL's reduction order differ from one GPU's
  // more than Gloo's from one CPU process; still far below one update.
  const equivalence::Tolerance tol{1e-3, 1e-3};
  for (const std::string policy : {"skrull", "cp-all"}) {
    for (const auto& [dp, cp] : layouts) {
      const RunSpec spec = on_gpus(RunSpec{dp, cp, policy, cp == 2 ? 120 : 200});
      const RunResult got = equivalence::Train(root, spec);
      equivalence::ExpectSameTraining(got, reference, spec.Name() + "-nccl", tol);
      if (cp == 2) {
        EXPECT_GT(got.comm["cp"]["distributed_calls"].get<int64_t>(), 0)
            << spec.Name() << " never exchanged K/V";
      }
    }
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

}  // namespace
}  // namespace skrull::dist
