#include "trainer/dist/rank_device.h"

#include <algorithm>
#include <cctype>

namespace skrull::dist {

std::string RankDevice::Name() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }

namespace {

// cuda:<local rank>, refused where two ranks of the node would share a GPU.
StatusOr<RankDevice> LocalRankGpu(const std::string& flag, int local_rank, int procs_per_node,
                                  int64_t visible) {
  if (visible < 1) {
    return FailedPreconditionError("device '" + flag +
                                   "': libtorch sees no CUDA device (CPU-only build, no GPU, or "
                                   "CUDA_VISIBLE_DEVICES empty); use --device cpu");
  }
  if (procs_per_node > visible) {
    return FailedPreconditionError(
        "device '" + flag + "': spec.parallelism.procsPerNode is " +
        std::to_string(procs_per_node) + " but this rank sees " + std::to_string(visible) +
        " GPU(s); each rank needs its own (NCCL refuses two ranks on one GPU): lower "
        "procsPerNode to " +
        std::to_string(visible) + " or make " + std::to_string(procs_per_node) +
        " GPUs visible to every rank");
  }
  RankDevice d;
  d.cuda = true;
  d.index = local_rank;
  return d;
}

}  // namespace

StatusOr<RankDevice> ChooseRankDevice(const std::string& flag, int gpus_per_proc, int local_rank,
                                      int procs_per_node, int64_t visible) {
  SKRULL_CHECK(local_rank >= 0 && local_rank < procs_per_node && visible >= 0)
      << "local rank " << local_rank << " of " << procs_per_node << ", " << visible << " GPUs";
  if (flag == "cpu") return RankDevice();
  if (flag == "auto") {
    if (gpus_per_proc > 0 && visible > 0) {
      return LocalRankGpu(flag, local_rank, procs_per_node, visible);
    }
    RankDevice d;
    d.fell_back_to_cpu = gpus_per_proc > 0;
    return d;
  }
  if (flag == "cuda") return LocalRankGpu(flag, local_rank, procs_per_node, visible);
  if (flag.rfind("cuda:", 0) == 0) {
    const std::string digits = flag.substr(5);
    if (digits.empty() || digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); })) {
      return InvalidArgumentError("device '" + flag + "': expected cuda:<index>");
    }
    if (procs_per_node > 1) {
      return InvalidArgumentError(
          "device '" + flag + "': names one GPU for all " + std::to_string(procs_per_node) +
          " ranks of the node (spec.parallelism.procsPerNode); use --device cuda or auto (rank "
          "r of a node trains on cuda:r)");
    }
    const int index = std::stoi(digits);
    if (index >= visible) {
      return FailedPreconditionError("device '" + flag + "': this rank sees " +
                                     std::to_string(visible) + " CUDA device(s)");
    }
    RankDevice d;
    d.cuda = true;
    d.index = index;
    return d;
  }
  return InvalidArgumentError("device '" + flag + "': expected cpu, cuda, cuda:N or auto");
}

}  // namespace skrull::dist
