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
// An object is used by one thread (its rank's); a GradientReducer's
// GradReady may also run on the thread that runs backward.
//
// Overlap with backward (as PyTorch DDP): a backend may hand out a
// GradientReducer, which starts all-reducing buckets of gradients while the
// step's last backward still runs (train_step.h's GradReadyHooks call it).
// Backends without one (LocalCollectives, InMemoryCollectives) get
// AllReduceSum(tensors) after backward instead; the sums are the same.
#ifndef SKRULL_TRAINER_TRAIN_COLLECTIVES_H_
#define SKRULL_TRAINER_TRAIN_COLLECTIVES_H_

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "common/status.h"

namespace at {
class Tensor;
}  // namespace at

namespace skrull::train {

// A collective started by Collectives::StartReduceScatterSum / StartAllGather.
class CollectiveWork {
 public:
  virtual ~CollectiveWork() = default;
  // Blocks until the collective is done (its output is then valid).
  // Unavailable when it failed. Call at most once.
  virtual Status Wait() = 0;
};

// A CollectiveWork that is already done, with `status`.
std::unique_ptr<CollectiveWork> FinishedWork(Status status = OkStatus());

// One run's gradient all-reduce overlapped with backward, for a fixed list of
// parameters. Per step: GradReady(i) for parameters whose gradient became
// final during the last backward (any order, each at most once), then
// Finish(). REQUIRES: every rank has the same parameter list (shapes, dtypes).
class GradientReducer {
 public:
  virtual ~GradientReducer() = default;

  // params[index].grad() is final for this step. May launch asynchronous
  // all-reduces, always in the same order on every rank whatever the order of
  // the calls. Runs on the thread that runs backward; never throws (a failure
  // is returned by Finish).
  virtual void GradReady(size_t index) = 0;
  // Launches what GradReady did not (a parameter whose gradient never came
  // gets zeros), waits for every all-reduce and leaves each reduced gradient
  // (see MakeGradientReducer) summed over all ranks. Ready for the next step
  // after.
  // Unavailable when a collective failed.
  virtual Status Finish() = 0;

  // true: GradReady fires during EVERY backward of a step, each followed by
  // EndBackward() (ZeRO stage 2); false: only during the step's last one.
  virtual bool ReducesEveryBackward() const { return false; }
  // After each backward when ReducesEveryBackward(). Never throws (a failure
  // is returned by Finish).
  virtual void EndBackward() {}

  // Out of memory while packing a bucket (c10::OutOfMemoryError inside a
  // gradient hook) is not an ordinary failure: the reducer still joins every
  // collective of the step (the failed and later buckets with zeros, after
  // backward has freed its activations), so no peer waits for a collective
  // that never comes, and Finish returns OutOfMemory. The trainer then tells
  // every rank (trainer.h). Without memory even for that, Finish still
  // returns OutOfMemory and the peers fail on the collective timeout.
  //
  // Test hook: run as each bucket is packed, where an allocation would
  // throw (TrainerOptions::out_of_memory_in_gradient_hook_at_step).
  void set_pack_hook_for_testing(std::function<void()> hook) { pack_hook_ = std::move(hook); }

 protected:
  void RunPackHookForTesting() const {
    if (pack_hook_) pack_hook_();
  }

 private:
  std::function<void()> pack_hook_;
};

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
  // Returns once every rank has called it, waiting up to `timeout` outside
  // the communicator where the backend can (c10d: on the rendezvous store):
  // around file I/O one rank does alone (rank 0 committing a checkpoint),
  // which may outlast the collective timeout, and on NCCL a timed-out
  // collective aborts the process. Unavailable after `timeout`. Default:
  // Barrier().
  virtual Status WaitForAllRanks(std::chrono::milliseconds timeout) {
    (void)timeout;
    return Barrier();
  }

  // ZeRO (zero_optimizer.h). Both take 1-D contiguous float32 tensors; n =
  // out.numel() resp. input.numel(). May return before the collective is
  // done: the tensors must stay alive and untouched until Wait(). Every
  // rank starts the same collectives in the same order. They may be started
  // from the thread that runs backward (a GradientReducer).
  //
  // out = element-wise sum over ranks r' of input_{r'}[rank*n : (rank+1)*n].
  // REQUIRES: input.numel() == world_size() * out.numel().
  virtual std::unique_ptr<CollectiveWork> StartReduceScatterSum(const at::Tensor& input,
                                                                const at::Tensor& out) = 0;
  // out[r*n : (r+1)*n] = input of rank r.
  // REQUIRES: out.numel() == world_size() * input.numel().
  virtual std::unique_ptr<CollectiveWork> StartAllGather(const at::Tensor& input,
                                                         const at::Tensor& out) = 0;

  // Seconds spent blocked waiting for other ranks (reductions, barriers)
  // since the last call. 0 for backends that never wait.
  virtual double TakeWaitSeconds() { return 0; }

  // A reducer for `params` (float32 tensors shaped like the gradients, in the
  // order of GradReady's indices), or null when this backend does not
  // overlap the reduction with backward. When parameter i's bucket is
  // launched the reducer reduces, in place, reducible_grad(i) (a float32
  // tensor; Optimizer::ReducibleGradient), or params[i].grad() (zeros when
  // undefined) when reducible_grad is null. Called once per run; the
  // parameters and the callback outlive the reducer.
  virtual std::unique_ptr<GradientReducer> MakeGradientReducer(
      const std::vector<at::Tensor>& /*params*/,
      std::function<at::Tensor(size_t)> /*reducible_grad*/ = nullptr) {
    return nullptr;
  }
};

// World size 1.
class LocalCollectives final : public Collectives {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Status AllReduceSum(std::vector<at::Tensor>& tensors) override;
  Status AllReduceSum(std::vector<double>* values) override { return OkStatus(); }
  Status Barrier() override { return OkStatus(); }
  std::unique_ptr<CollectiveWork> StartReduceScatterSum(const at::Tensor& input,
                                                        const at::Tensor& out) override;
  std::unique_ptr<CollectiveWork> StartAllGather(const at::Tensor& input,
                                                 const at::Tensor& out) override;
};

// Creates `world_size` connected in-memory ranks; give element r to the
// thread that runs rank r. Sums are accumulated in rank order, so results
// are deterministic. REQUIRES: world_size >= 1.
std::vector<std::unique_ptr<Collectives>> MakeInMemoryGroup(int world_size);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_COLLECTIVES_H_
