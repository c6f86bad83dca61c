// The hook between the training loop and context-parallel attention
// (implemented in trainer/dist).
//
// With cp > 1 the trainer installs a ContextParallelAttention as the model's
// attention backend. Before the forward of each micro-batch it calls
// BeginMicroBatch with the rank's RankStream (micro_batch_builder.h): the
// stream's local sequences are rows [0, local_tokens) (described by the
// AttentionLayout's cu_seqlens, as for any backend) and the shards of the
// distributed sequences follow; `stream.distributed` tells where every CP
// rank's chunks sit and which global positions they hold, so the backend can
// all-gather K/V over the CP group and mask causally by global position.
//
// Lockstep: every CP rank of a DP group runs the same micro-batches in the
// same order (the trainer skips a micro-batch only when the plan's
// micro-batch is empty, which is the same on all CP ranks), so a rank whose
// stream is empty (every distributed sequence shorter than its chunks) still
// runs forward and backward and takes part in the exchange.
#ifndef SKRULL_TRAINER_TRAIN_CONTEXT_PARALLEL_H_
#define SKRULL_TRAINER_TRAIN_CONTEXT_PARALLEL_H_

#include <c10/core/Device.h>

#include <functional>
#include <memory>

#include "common/status.h"
#include "scheduler/micro_batch_builder.h"
#include "trainer/model/attention.h"

namespace skrull::train {

class ContextParallelAttention : public model::AttentionBackend {
 public:
  // Called before the micro-batch's forward; the stream outlives the
  // micro-batch's forward and backward.
  virtual Status BeginMicroBatch(const scheduler::RankStream& stream) = 0;
  // Seconds blocked in waits on the CP group (forward and backward) since the
  // last call.
  virtual double TakeCommWaitSeconds() { return 0; }
};

// Makes the backend for a rank's model on `device`. Called once, after the
// model is built. trainer/dist supplies it; RunTrainer refuses cp > 1
// without one.
using ContextParallelAttentionFactory =
    std::function<StatusOr<std::unique_ptr<ContextParallelAttention>>(c10::Device device)>;

}  // namespace skrull::train

#endif  // SKRULL_TRAINER_TRAIN_CONTEXT_PARALLEL_H_
