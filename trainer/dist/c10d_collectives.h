// C10dCollectives: the training loop's Collectives seam on a c10d world group.
//
// Gradients: AllReduceSum(tensors) is called once per step with every
// trainable parameter's gradient. The tensors are packed in order into
// buckets of about `bucket_bytes` (same dtype and device per bucket; a tensor
// at least that large and contiguous is reduced in place, without a copy),
// and every bucket's all-reduce is launched asynchronously before the first
// one is awaited, so packing, the transfers and unpacking overlap.
// Scalars (loss sums, label counts, stop flags) travel as one float64 tensor
// on the group's device (Group::device: the GPU on NCCL).
//
// On NCCL the buckets are the gradients' own device tensors (packed with
// at::cat on the device, never staged through host memory), the all-reduces
// run on c10d's NCCL stream, and waiting makes the compute stream wait on
// their events (see cp_exchange.h): the host does not block, so the wait
// seconds counted here are near zero there.
//
// Overlap with backward (MakeGradientReducer, as PyTorch DDP): the
// parameters are packed into buckets of about `bucket_bytes` in REVERSE
// parameter order (the order backward produces their gradients). Bucket k's
// all-reduce is launched as soon as every gradient in it is final and buckets
// 0..k-1 are launched, so the launch order is the same on every rank whatever
// order the hooks fire in; Finish() launches the rest (gradients that never
// came are zeros), waits for all and unpacks. The sums equal AllReduceSum's.
//
// Wire dtype (spec.training.gradReduceDtype): with
// `gradient_wire_dtype` bf16, every float32 gradient bucket (AllReduceSum,
// the reducer, ZeRO's StartReduceScatterSum) is rounded to a bf16 copy,
// reduced in bf16 (half the bytes) and converted back into the float32
// tensors when waited for; sums of other dtypes, scalars and all-gathers
// travel as they are. docs/architecture.md ("Gradient precision") bounds
// the difference from the float32 reduction.
//
// Failures of the collective (a peer died, a timeout) come back as
// Unavailable naming the operation, group, rank and bytes.
//
// Thread safety: one training thread per object (c10d's worker threads do the
// transfers).
#ifndef SKRULL_TRAINER_DIST_C10D_COLLECTIVES_H_
#define SKRULL_TRAINER_DIST_C10D_COLLECTIVES_H_

#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "api/job_spec.h"
#include "trainer/dist/process_groups.h"
#include "trainer/train/collectives.h"

namespace skrull::dist {

struct C10dCollectivesOptions {
  int64_t bucket_bytes = 25 << 20;  // ~25 MB, as PyTorch DDP; smaller = more, earlier buckets
  // Hand out a GradientReducer (reduce during backward). false: the trainer
  // reduces every gradient after backward with AllReduceSum.
  bool overlap_with_backward = true;
  // The dtype float32 gradients are reduced in over the network: kFloat (as
  // they are) or kBFloat16 (spec.training.gradReduceDtype bf16).
  c10::ScalarType gradient_wire_dtype = c10::kFloat;
};

// Accounting since the last TakeStats().
struct DpCommStats {
  double wait_seconds = 0;          // blocked waiting for all-reduces / barriers
  int64_t gradient_allreduces = 0;  // AllReduceSum(tensors) calls
  int64_t buckets = 0;              // c10d all-reduces they issued
  int64_t bytes = 0;                // gradient bytes reduced (on the wire: bf16 counts 2 each)
  int64_t scalar_allreduces = 0;
  int64_t buckets_during_backward = 0;  // of `buckets`, launched by GradReady (overlapped)
  int64_t zero_collectives = 0;         // reduce-scatters and all-gathers started (ZeRO)
};

class C10dCollectives final : public train::Collectives {
 public:
  // `world` (and `store`, the rendezvous store, when given) must outlive this
  // object. Without a store WaitForAllRanks is Barrier().
  explicit C10dCollectives(Group* world, C10dCollectivesOptions options = {},
                           c10d::Store* store = nullptr);

  int rank() const override { return world_->rank; }
  int world_size() const override { return world_->size; }
  Status AllReduceSum(std::vector<at::Tensor>& tensors) override;
  Status AllReduceSum(std::vector<double>* values) override;
  Status Barrier() override;
  // A counter on the store: the rank that completes it sets a done key the
  // others wait for (Store::wait, no polling, no collective).
  Status WaitForAllRanks(std::chrono::milliseconds timeout) override;
  double TakeWaitSeconds() override;
  // ZeRO: StartReduceScatterSum / StartAllGather of process_groups.h on the
  // world group; Wait() adds the blocked time to wait_seconds.
  std::unique_ptr<train::CollectiveWork> StartReduceScatterSum(const at::Tensor& input,
                                                               const at::Tensor& out) override;
  std::unique_ptr<train::CollectiveWork> StartAllGather(const at::Tensor& input,
                                                        const at::Tensor& out) override;
  // Null when options.overlap_with_backward is false or the world has one
  // rank. The reducer uses this object's group and accounting: it must not
  // outlive it.
  std::unique_ptr<train::GradientReducer> MakeGradientReducer(
      const std::vector<at::Tensor>& params,
      std::function<at::Tensor(size_t)> reducible_grad = nullptr) override;

  DpCommStats TakeStats();

 private:
  class Reducer;
  class ZeroWork;

  // What travels for `t`: a copy rounded to options_.gradient_wire_dtype
  // when t is float32, that dtype is another and there are peers; else t.
  at::Tensor OnWire(const at::Tensor& t) const;

  Group* world_;
  C10dCollectivesOptions options_;
  c10d::Store* store_;
  int64_t store_waits_ = 0;  // WaitForAllRanks calls: each uses its own keys
  DpCommStats stats_;
  double wait_seconds_taken_ = 0;  // stats_.wait_seconds at the last TakeWaitSeconds
};

// The C10dCollectivesOptions::gradient_wire_dtype of `dtype`.
c10::ScalarType GradientWireDtype(api::GradReduceDtype dtype);

// How AllReduceSum(tensors) groups tensors: indices of `tensors` per bucket,
// in order (exposed for tests). A bucket holds one dtype and device.
std::vector<std::vector<size_t>> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                             int64_t bucket_bytes);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_C10D_COLLECTIVES_H_
