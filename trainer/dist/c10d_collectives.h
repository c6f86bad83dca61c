// C10dCollectives: the training loop's Collectives seam on a c10d world group.
//
// Gradients: AllReduceSum(tensors) is called once per step with every
// trainable parameter's gradient. The tensors are packed in order into
// buckets of about `bucket_bytes` (same dtype and device per bucket; a tensor
// at least that large and contiguous is reduced in place, without a copy),
// and every bucket's all-reduce is launched asynchronously before the first
// one is awaited, so packing, the transfers and unpacking overlap.
// Scalars (loss sums, label counts, stop flags) travel as one float64 tensor.
//
// Failures of the collective (a peer died, a timeout) come back as
// Unavailable naming the operation, group, rank and bytes.
//
// Thread safety: one training thread per object (c10d's worker threads do the
// transfers).
#ifndef SKRULL_TRAINER_DIST_C10D_COLLECTIVES_H_
#define SKRULL_TRAINER_DIST_C10D_COLLECTIVES_H_

#include <cstdint>
#include <vector>

#include "trainer/dist/process_groups.h"
#include "trainer/train/collectives.h"

namespace skrull::dist {

struct C10dCollectivesOptions {
  int64_t bucket_bytes = 25 << 20;  // ~25 MB, as PyTorch DDP
};

// Accounting since the last TakeStats().
struct DpCommStats {
  double wait_seconds = 0;          // blocked waiting for all-reduces / barriers
  int64_t gradient_allreduces = 0;  // AllReduceSum(tensors) calls
  int64_t buckets = 0;              // c10d all-reduces they issued
  int64_t bytes = 0;                // gradient bytes reduced
  int64_t scalar_allreduces = 0;
};

class C10dCollectives final : public train::Collectives {
 public:
  // `world` must outlive this object.
  explicit C10dCollectives(Group* world, C10dCollectivesOptions options = {});

  int rank() const override { return world_->rank; }
  int world_size() const override { return world_->size; }
  Status AllReduceSum(std::vector<at::Tensor>& tensors) override;
  Status AllReduceSum(std::vector<double>* values) override;
  Status Barrier() override;

  DpCommStats TakeStats();

 private:
  Group* world_;
  C10dCollectivesOptions options_;
  DpCommStats stats_;
};

// How AllReduceSum(tensors) groups tensors: indices of `tensors` per bucket,
// in order (exposed for tests). A bucket holds one dtype and device.
std::vector<std::vector<size_t>> PlanBuckets(const std::vector<at::Tensor>& tensors,
                                             int64_t bucket_bytes);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_C10D_COLLECTIVES_H_
