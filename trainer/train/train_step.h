// One rank's forward and backward work of one optimizer step, before the
// gradient all-reduce: every micro-batch of the plan for this (dp_rank,
// cp_rank), with the loss normalised by the GLOBAL batch's label-token count.
//
// Why that normalisation: the step's objective is
//   L = (sum over every label token of the global batch of CE) / N_global,
// so its gradient is the sum over micro-batches (and ranks) of
//   d(LossSum(micro-batch)) / N_global.
// That sum does not depend on how the scheduler grouped sequences into
// micro-batches or ranks (only floating-point summation order changes),
// unlike "mean per micro-batch / number of micro-batches".
//
// Thread safety: one training thread per model.
#ifndef SKRULL_TRAINER_TRAIN_TRAIN_STEP_H_
#define SKRULL_TRAINER_TRAIN_TRAIN_STEP_H_

#include <c10/core/Device.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/status.h"
#include "scheduler/micro_batch_builder.h"
#include "scheduler/plan.h"
#include "trainer/model/model.h"
#include "trainer/model/packed_batch.h"
#include "trainer/train/collectives.h"
#include "trainer/train/context_parallel.h"

namespace skrull::train {

// The stream's tensors on `device` (cu_seqlens = the local sequences).
model::PackedBatch ToPackedBatch(const scheduler::RankStream& stream, c10::Device device);

struct RankStepWork {
  double loss_sum = 0;                // summed CE over this rank's label tokens (not normalised)
  int64_t tokens = 0;                 // tokens this rank computed
  int64_t label_tokens = 0;           // label tokens among them
  int64_t micro_batches = 0;          // non-empty micro-batches run
  int64_t rank_tokens_peak = 0;       // most tokens in one of this rank's micro-batches
  int64_t local_sequences = 0;        // sequences run whole on this rank
  int64_t distributed_sequences = 0;  // sequences this rank ran a shard of
  double model_flops = 0;             // filled by the caller (needs the cost model)
};

// Tells a GradientReducer when a parameter's gradient is final: a post hook
// on each parameter's gradient accumulator (the autograd node that adds into
// .grad; it runs once per backward, after every contribution of that backward
// has been summed) calls reducer->GradReady(i) while armed. The accumulators
// are held here: a tensor holds its own only weakly, so without that they
// (and the hooks) would die with each graph. Works the same on libtorch 1.13
// and 2.x (Node::add_post_hook / del_post_hook).
// `accumulate`, when given, runs in the same hook during EVERY backward,
// armed or not, before GradReady: an optimizer folds the parameter's bf16
// .grad into a float32 sum there (Optimizer / ZeroOptimizer::
// AccumulateGradient), so micro-batches are summed in float32. It may throw
// (out of memory): the exception leaves backward().
// Thread safety: arm and disarm from the training thread while no backward
// runs; hooks run on the backward thread.
class GradReadyHooks {
 public:
  // REQUIRES: every tensor is a leaf that requires grad; `reducer` (may be
  // null when `accumulate` is given) outlives this object and was made for
  // the same `params`, in the same order.
  GradReadyHooks(const std::vector<at::Tensor>& params, GradientReducer* reducer,
                 std::function<void(size_t)> accumulate = nullptr);
  ~GradReadyHooks();  // removes the hooks
  GradReadyHooks(const GradReadyHooks&) = delete;
  GradReadyHooks& operator=(const GradReadyHooks&) = delete;

  void set_armed(bool armed);
  bool armed() const;
  // The reducer's ReducesEveryBackward() / EndBackward() (ZeRO stage 2;
  // false / nothing without a reducer).
  bool every_backward() const;
  void EndBackward();

  struct State;  // shared with the hooks; defined in train_step.cc

 private:
  std::shared_ptr<State> state_;
  // std::shared_ptr<Node> before libtorch 2.13, c10::intrusive_ptr<Node> after.
  using NodeRef =
      decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));
  std::vector<NodeRef> accumulators_;
  std::vector<uintptr_t> keys_;
};

// Builds this rank's streams for `plan` and, for each micro-batch that is not
// empty in the plan, runs LossSum and backward of LossSum / global_label_tokens,
// accumulating into the trainable parameters' gradients (not zeroed here).
// `cp_attention` is required when plan.topology.cp > 1 (and must be the
// model's backend); it gets BeginMicroBatch before each forward.
// `last_backward_hooks`, when given, is armed during the backward of the last
// micro-batch this rank runs (earlier ones only accumulate), so gradient
// buckets can be reduced while that backward runs; the caller then calls its
// reducer's Finish() (also when no micro-batch ran). When its reducer
// ReducesEveryBackward() (ZeRO stage 2) it is armed during every backward,
// each followed by EndBackward().
// REQUIRES: global_label_tokens > 0.
StatusOr<RankStepWork> AccumulateGradients(model::DecoderModel* model, const scheduler::Plan& plan,
                                           const std::vector<scheduler::SequenceTokens>& batch,
                                           int dp_rank, int cp_rank, int64_t global_label_tokens,
                                           ContextParallelAttention* cp_attention = nullptr,
                                           GradReadyHooks* last_backward_hooks = nullptr);

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_TRAIN_STEP_H_
