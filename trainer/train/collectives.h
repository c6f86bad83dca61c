// Collectives: the trainer's seam for communication across ranks (the world
// group, DP x CP). The training loop reduces gradients and a few scalars once
// per step through it; it never talks to c10d directly.
//
// Implementations:
//   - LocalCollectives (here): world size 1; every call is a no-op.
//   - InMemoryCollectives (here): N ranks as N threads of one process, for
//     tests of data-parallel equivalence without processes or sockets.
//   - trainer/dist: c10d (Gloo on CPU, NCCL on CUDA).
//
// Every rank must make the same calls in the same order with tensors of the
// same shapes and dtypes (as with c10d). Results are identical on every rank.
// An object is used by one thread (its rank's).
#ifndef SKRULL_TRAINER_TRAIN_COLLECTIVES_H_
#define SKRULL_TRAINER_TRAIN_COLLECTIVES_H_

#include <memory>
#include <vector>

#include "common/status.h"

namespace at {
class Tensor;
}  // namespace at

namespace skrull::train {

class Collectives {
 public:
  virtual ~Collectives() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Element-wise sum over all ranks, in place, for each tensor (any dtype
  // the backend supports; the trainer passes fp32 gradients).
  virtual Status AllReduceSum(std::vector<at::Tensor>& tensors) = 0;
  // Element-wise sum over all ranks, in place.
  virtual Status AllReduceSum(std::vector<double>* values) = 0;
  // Returns once every rank has called it.
  virtual Status Barrier() = 0;
};

// World size 1.
class LocalCollectives final : public Collectives {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Status AllReduceSum(std::vector<at::Tensor>& tensors) override;
  Status AllReduceSum(std::vector<double>* values) override { return OkStatus(); }
  Status Barrier() override { return OkStatus(); }
};

// Creates `world_size` connected in-memory ranks; give element r to the
// thread that runs rank r. Sums are accumulated in rank order, so results
// are deterministic. REQUIRES: world_size >= 1.
std::vector<std::unique_ptr<Collectives>> MakeInMemoryGroup(int world_size);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_COLLECTIVES_H_
