// Validation loss (docs/job-spec.md, spec.data.eval): the mean cross-entropy
// per label token of a held-out set, computed with the training step's plans
// run forward-only on every rank.
//
// The set (its first maxSequences samples, in file order) is cut into chunks
// of one global batch; each chunk is planned by the job's scheduler policy
// for the same DP x CP topology and BucketSize as training, every rank runs
// LossSum of its micro-batches without building a graph, and one all-reduce
// sums the losses. eval_loss = that sum / the set's label tokens (from the
// index), so, like the training loss (train_step.h), it does not depend on
// the layout or policy: only the order of floating-point sums changes.
#ifndef SKRULL_TRAINER_TRAIN_EVAL_LOSS_H_
#define SKRULL_TRAINER_TRAIN_EVAL_LOSS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"
#include "trainer/data/data_mixture.h"
#include "trainer/model/model.h"
#include "trainer/train/collectives.h"
#include "trainer/train/context_parallel.h"
#include "trainer/train/train_step.h"

namespace skrull::train {

// LossSum of this rank's micro-batches of `plan`, forward only (no graph, no
// gradients). Every micro-batch that is not empty in the plan runs on every
// CP rank of its DP rank, so context-parallel exchanges stay in lockstep.
StatusOr<RankStepWork> ForwardLossSum(model::DecoderModel* model, const scheduler::Plan& plan,
                                      const std::vector<scheduler::SequenceTokens>& batch,
                                      int dp_rank, int cp_rank,
                                      ContextParallelAttention* cp_attention);

// What a validation pass needs from the run; all pointers outlive the call.
struct EvalContext {
  model::DecoderModel* model = nullptr;
  ContextParallelAttention* cp_attention = nullptr;  // required when cp > 1
  Collectives* collectives = nullptr;
  scheduler::Policy policy = scheduler::Policy::kSkrull;
  scheduler::ScheduleOptions schedule;  // topology, BucketSize, hardware
  const scheduler::CostModel* cost = nullptr;
  int dp_rank = 0;
  int cp_rank = 0;
};

class EvalSet {
 public:
  // The first `max_sequences` samples of `data` (0 = all), in chunks of
  // `global_batch` sequences. REQUIRES: global_batch >= 1.
  EvalSet(std::unique_ptr<data::DataMixture> data, int64_t max_sequences, int64_t global_batch);

  int64_t sequences() const { return count_; }
  int64_t label_tokens() const { return label_tokens_; }
  const data::DataMixture& data() const { return *data_; }

  // The validation loss; the same value on every rank. Every rank must call
  // it at the same point (it runs collectives).
  StatusOr<double> Evaluate(const EvalContext& ctx) const;

 private:
  StatusOr<double> ChunkLossSum(const EvalContext& ctx, int64_t first, int64_t end) const;

  std::unique_ptr<data::DataMixture> data_;
  int64_t count_;
  int64_t global_batch_;
  int64_t label_tokens_ = 0;
};

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_EVAL_LOSS_H_
