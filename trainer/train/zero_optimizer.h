// ZeroOptimizer: AdamW with ZeRO stage 1 or 2 (spec.training.zeroStage)
// over the world group (all DP x CP ranks), the sharded counterpart of
// Optimizer (optimizer.h; same hyper-parameters, parameter groups, clipping
// and update rule, so the weights after N steps equal stage 0's up to
// floating-point summation order: docs/performance.md gives the measured
// differences).
//
// Each rank keeps, for its shard of the elements (ZeroPartition), AdamW's
// exp_avg / exp_avg_sq, the summed gradient and, for parameters that are not
// float32 (bf16 on CUDA), the float32 master weights; the model keeps full
// parameters (its own dtype) for forward and backward. Float32 parameters are
// their own masters: every rank's copy is exactly the last all-gather's.
//
//   stage 1: backward accumulates full gradients over a step's
//            micro-batches: in the model's .grad for float32 parameters, in
//            a float32 sum per parameter for the others (AccumulateGradient
//            after each backward, so bf16 gradients are not summed in bf16).
//            During the step's last backward each bucket is reduce-scattered
//            (asynchronously where the backend can) as soon as all its
//            gradients are final, and its full gradients are freed;
//            FinishGradients() does the rest.
//   stage 2: the same during EVERY micro-batch's backward (DeepSpeed's
//            stage 2): each micro-batch's bucket is reduce-scattered and
//            added to this rank's gradient shard, and the full gradients are
//            freed, so a rank never holds more than the buckets in flight of
//            full gradients. Ranks that run fewer backward passes than
//            BeginStep's `rounds` join the missing reduce-scatters with zeros
//            in FinishGradients().
//   Step(lr): global norm (sum of squares over ranks), clip, AdamW on the
//            shard, then a bucketed all-gather of the updated master weights
//            into every rank's parameters.
//
// Checkpoints (zero_checkpoint.cc): every rank writes its shard, optimizer
// state only; rank 0 writes optimizer.json with the partition. Load() takes a
// checkpoint of any world size (re-sharding) or stage 0's optimizer.safetensors.
//
// Thread safety: one training thread; reducer() callbacks also run on the
// thread that runs backward.
#ifndef SKRULL_TRAINER_TRAIN_ZERO_OPTIMIZER_H_
#define SKRULL_TRAINER_TRAIN_ZERO_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/model/model.h"
#include "trainer/train/collectives.h"
#include "trainer/train/optimizer.h"
#include "trainer/train/zero_partition.h"

namespace skrull::train {

// ~25 MB of float32 per bucket, as PyTorch DDP's and DeepSpeed's defaults.
inline constexpr int64_t kZeroBucketNumel = int64_t{25} << 18;

// <dir>/optimizer-shard-<rank>-of-<world>.safetensors
std::string ZeroShardFileName(int rank, int world_size);

class ZeroOptimizer {
 public:
  // `params`: the model's trainable parameters (as Optimizer). `stage` 1 or 2.
  // `collectives` connects the world group and outlives this object.
  ZeroOptimizer(std::vector<model::NamedTensor> params, const OptimizerOptions& options, int stage,
                Collectives* collectives, int64_t bucket_numel = kZeroBucketNumel);
  ~ZeroOptimizer();
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  int stage() const { return stage_; }
  const ZeroPartition& partition() const { return partition_; }
  const std::vector<model::NamedTensor>& params() const { return params_; }

  // What GradReadyHooks on params() call (train_step.h). Stage 2's reduces
  // during every backward (ReducesEveryBackward()).
  GradientReducer* reducer();

  // Stage 1, parameter not float32: adds params()[i]'s .grad (what the last
  // backward accumulated) into its float32 sum for this step and frees it.
  // No-op otherwise (stage 2 reduces each backward's gradient on its own,
  // into the float32 shard). What GradReadyHooks' accumulate callback calls
  // after every backward; throws what libtorch throws.
  void AccumulateGradient(size_t i);

  // Before a step's micro-batches. `rounds`: the most backward passes any
  // rank runs this step, the same on every rank (stage 2 joins that many
  // reduce-scatters per bucket).
  void BeginStep(int64_t rounds);
  // After the step's backward passes: every remaining reduce-scatter is
  // launched and awaited; this rank's shard then holds its slice of the
  // gradient summed over all ranks and micro-batches. Unavailable when a
  // collective failed.
  Status FinishGradients();
  // Clips by the global norm (over all ranks), runs AdamW on the shard at
  // `lr`, all-gathers the master weights into the model's parameters and
  // frees the model's gradients. Returns the norm before clipping.
  // REQUIRES: FinishGradients() succeeded since the last backward.
  StatusOr<double> Step(double lr);

  // Bytes this rank holds for training state besides activations: the
  // model's parameters, the full gradients stage 1 keeps between backward
  // passes (float32 sums for parameters that are not float32; 0 for stage
  // 2), and the float32 shard tensors.
  int64_t StaticMemoryBytes() const;

  // Writes this rank's shard (safetensors, atomically) into `dir`.
  Status SaveShard(const std::string& dir) const;
  // Writes optimizer.json (rank 0's part of a checkpoint) into `dir`.
  Status SaveIndex(const std::string& dir) const;
  // Restores this rank's shard from a checkpoint folder written at any world
  // size by ZeroOptimizer (re-sharding when the partition differs) or by
  // Optimizer (stage 0). The model's parameters must be loaded first: float32
  // master weights are taken from them. InvalidArgument naming the file and
  // field when the state does not match the model.
  Status Load(const std::string& dir);

 private:
  class Reducer;
  friend class Reducer;
  bool mixed() const;
  void MastersFromParams();
  // This rank's part of the squared global gradient norm.
  double GlobalNormSquaredPart() const;
  // Parameter i's full gradient summed over the step's backward passes so
  // far (undefined when none came), handed over: the model's .grad or the
  // float32 sum are released.
  at::Tensor TakeGradient(size_t i);
  // AdamW on bucket b's slice; returns the updated float32 master slice.
  at::Tensor UpdateSlice(size_t b, double lr);

  std::vector<model::NamedTensor> params_;
  OptimizerOptions options_;
  int stage_;
  Collectives* coll_;
  ZeroPartition partition_;
  std::vector<ZeroPiece> pieces_;                      // this rank's
  std::vector<std::vector<ZeroPiece>> bucket_pieces_;  // pieces_ by bucket
  int64_t step_ = 0;                                   // AdamW steps taken
  // float32 [shard_numel] masters of non-float32 parameters; float32
  // parameters are their own masters (read per bucket in Step).
  at::Tensor master_;
  at::Tensor exp_avg_;
  at::Tensor exp_avg_sq_;
  at::Tensor grad_;  // this rank's slice of the summed gradient
  // Stage 1, per parameter that is not float32: its float32 gradient summed
  // over this step's backward passes (undefined until the first, and after
  // its bucket is launched).
  std::vector<at::Tensor> grad_sums_;
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_ZERO_OPTIMIZER_H_
