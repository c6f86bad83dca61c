// Process groups of a DP x CP job on c10d (Gloo on CPU, NCCL on CUDA).
//
// Rendezvous: rank 0 serves a TCPStore on master_addr:master_port, every rank
// connects within `timeout`, then the groups are built in the same order on
// every rank:
//   world        all ranks (gradients, scalar reductions);
//   cp[dp=d]     ranks d*cp .. d*cp+cp-1 (the K/V exchange of distributed
//                sequences);
//   dp[cp=c]     ranks c, cp+c, ... (one per CP rank);
//   cp[dp=d,f..l] the aligned CP sub-groups holding this rank, ascending size
//                (CP ranks f..l of size 2, 4, ... below cp, f a multiple of
//                the size: sequences sharded over a sub-group, scheduler/plan.h).
// A group is built only by its members (each has its own store prefix), so
// every rank builds its own groups in this fixed order.
// See rank_layout.h for the arithmetic.
//
// Every c10d call made by trainer/dist goes through SKRULL_C10D_CHECK, which
// rethrows a c10d failure as CollectiveError naming the operation, the group,
// the rank and the bytes involved.
//
// Thread safety: groups may be used from one thread per rank; c10d's own
// worker threads run the collectives.
#ifndef SKRULL_TRAINER_DIST_PROCESS_GROUPS_H_
#define SKRULL_TRAINER_DIST_PROCESS_GROUPS_H_

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/job_spec.h"
#include "common/status.h"
#include "trainer/dist/launcher.h"
#include "trainer/dist/rank_device.h"
#include "trainer/dist/rank_layout.h"

namespace skrull::dist {

// The communicator type: libtorch 2.x ProcessGroupGloo/NCCL derive from
// c10d::Backend; in 1.13 they derive from c10d::ProcessGroup.
#if TORCH_VERSION_MAJOR >= 2
using CommGroup = c10d::Backend;
#else
using CommGroup = c10d::ProcessGroup;
#endif

// The one place that knows which communication library is used.
enum class CommBackend { kGloo, kNccl };
const char* CommBackendName(CommBackend backend);
// True when this build can create NCCL groups (SKRULL_WITH_CUDA).
bool NcclAvailable();

// A communicator and who is in it.
struct Group {
  std::string name;  // "world", "cp[dp=1]", "dp[cp=0]"
  c10::intrusive_ptr<CommGroup> pg;
  CommBackend backend = CommBackend::kGloo;
  int rank = 0;  // inside the group
  int size = 1;
  int global_rank = 0;
  // Where tensors of this group's collectives live: the CPU for Gloo, this
  // rank's GPU for NCCL (RendezvousOptions::cuda_device). Host values (loss sums, flags) are
  // reduced in a tensor here.
  c10::Device device = c10::Device(c10::kCPU);
  // "cp[dp=1] rank 0/2 (global rank 2)".
  std::string Describe() const;
};

// A c10d failure with its context; thrown by SKRULL_C10D_CHECK.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace internal {
[[noreturn]] void ThrowCollectiveError(const char* op, const Group& group, int64_t bytes,
                                       const char* file, int line, const char* what);
}  // namespace internal

// Runs `expr` (a c10d call on `group`) and rethrows any exception as a
// CollectiveError: "c10d allgather failed on cp[dp=0] rank 1/2 (global rank 1),
// 4096 bytes, at cp_attention.cc:120: <c10d's message>". Evaluates to expr.
#define SKRULL_C10D_CHECK(group, op, bytes, expr)                                          \
  [&]() -> decltype(auto) {                                                                \
    try {                                                                                  \
      return expr;                                                                         \
    } catch (const std::exception& skrull_c10d_e) {                                        \
      ::skrull::dist::internal::ThrowCollectiveError(op, group, bytes, __FILE__, __LINE__, \
                                                     skrull_c10d_e.what());                \
    }                                                                                      \
  }()

struct RendezvousOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // Rendezvous deadline (connecting to the TCPStore and its operations).
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // How long one collective may take before it fails: the process groups'
  // own timeout (Gloo's Options, NCCL's watchdog). On NCCL a collective that
  // fails or times out ABORTS the process (PyTorch's default
  // TORCH_NCCL_ASYNC_ERROR_HANDLING), it does not come back as Unavailable;
  // the launcher then stops the other ranks. spec.training.collectiveTimeoutSeconds.
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(1800)};
  CommBackend backend = CommBackend::kGloo;
  // NCCL: this rank's GPU index, from ChooseRankDevice (rank_device.h), the
  // rule the trainer's tensors follow too. Unused by Gloo.
  int cuda_device = 0;
  // Gloo only: bind to this interface ("" = the address the master is
  // reached by for loopback masters, else the host name's address).
  std::string gloo_interface;
};

// The one place rendezvous options are built: master address and port,
// timeout and Gloo interface from the rank's environment, `backend`, and the
// collective timeout from spec.training.collectiveTimeoutSeconds.
RendezvousOptions RendezvousOptionsFor(const RankEnv& env, CommBackend backend,
                                       const api::JobSpec& job);

// The backend training uses: NCCL when this build has it and the rank trains
// on a GPU (ChooseRankDevice); else Gloo.
CommBackend TrainingBackend(const RankDevice& device);

class ProcessGroups {
 public:
  // Connects to (rank 0: serves) the TCPStore and builds the groups.
  // Unavailable when the store cannot be reached in time; the message names
  // the address, port, rank and world size.
  // Side effects: sets SIGPIPE to ignored for the process, so a dead peer is
  // reported as an error from the collective rather than killing this rank;
  // on NCCL, makes options.cuda_device the current CUDA device (c10d binds its
  // communicators to it). FailedPrecondition when NCCL is asked for and no
  // GPU is visible.
  static StatusOr<std::unique_ptr<ProcessGroups>> Create(const RankLayout& layout,
                                                         const RendezvousOptions& options);
  // Builds the groups over an existing store (tests).
  static StatusOr<std::unique_ptr<ProcessGroups>> CreateWithStore(
      c10::intrusive_ptr<c10d::Store> store, const RankLayout& layout,
      const RendezvousOptions& options);

  const RankLayout& layout() const { return layout_; }
  Group& world() { return world_; }
  Group& cp() { return cp_; }
  Group& dp() { return dp_; }
  // This rank's aligned CP sub-groups, ascending size (empty when cp < 4).
  std::vector<Group>& cp_sub_groups() { return cp_sub_groups_; }
  CommBackend backend() const { return world_.backend; }
  c10d::Store& store() { return *store_; }

 private:
  ProcessGroups() = default;
  // Declared in creation order, so they are destroyed (and their
  // communicators torn down) in reverse: sub-groups, dp, cp, world, store.
  RankLayout layout_;
  c10::intrusive_ptr<c10d::Store> store_;
  Group world_;
  Group cp_;
  Group dp_;
  std::vector<Group> cp_sub_groups_;
};

// A collective in flight. Wait() blocks until it is done (running any
// completion step, e.g. the local sum of a Gloo reduce-scatter) and returns
// the seconds spent blocked. Wait() on a finished or empty one returns 0.
class PendingCollective {
 public:
  PendingCollective() = default;
  PendingCollective(const Group* group, const char* op, int64_t bytes,
                    c10::intrusive_ptr<c10d::Work> work, std::function<void()> finish = nullptr);
  double Wait();
  bool pending() const { return work_ != nullptr; }

 private:
  const Group* group_ = nullptr;
  const char* op_ = "";
  int64_t bytes_ = 0;
  c10::intrusive_ptr<c10d::Work> work_;
  std::function<void()> finish_;
};

// The CP exchange primitives (all-gather, reduce-scatter) are in
// cp_exchange.h.

// In-place element-wise sum over the group.
PendingCollective StartAllReduceSum(Group& group, const at::Tensor& tensor);

int64_t TensorBytes(const at::Tensor& t);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_PROCESS_GROUPS_H_
